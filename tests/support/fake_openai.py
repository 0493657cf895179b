"""A fake OpenAI-compatible /v1/chat/completions server on a free localhost port (no network)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# respond(request body, request headers) -> (HTTP status, response body)
Responder = Callable[[dict, dict], tuple[int, bytes]]


def reverse_reply(body: dict, headers: dict) -> tuple[int, bytes]:
    """A chat completion answering the last message with its reverse (so the order of replies is checkable)."""
    prompt = body["messages"][-1]["content"]
    return 200, json.dumps({"choices": [{"message": {"role": "assistant", "content": prompt[::-1]}}]}).encode()


def echo_headers(status: int) -> Responder:
    """A responder answering every request with the request's own headers (the worst case for a leaked key),
    with `status`: a chat completion quoting them (200), or an error body that holds the bare key too."""

    def respond(body: dict, headers: dict) -> tuple[int, bytes]:
        echoed = json.dumps({"headers": headers})
        if status == 200:
            return status, json.dumps({"choices": [{"message": {"content": f"echo: {echoed}"}}]}).encode()
        # the bare key (no "Bearer" a pattern could spot) starts at character 190, so the
        # error's 200-character excerpt cuts it: redacting after the cut would leave 10 characters
        key = headers["Authorization"].removeprefix("Bearer ")
        return status, ("x" * 181 + f"your key {key} {echoed}").encode()

    return respond


class FakeOpenAIServer:
    """Answers every POST with `respond`, after `failures_before_success` answers of `failure_status`;
    records every request (path and body) and its headers. Use as a context manager."""

    def __init__(self, respond: Responder = reverse_reply, failures_before_success: int = 0, failure_status: int = 503):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.failures_left = failures_before_success
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, **body})
                outer.headers.append(dict(self.headers))
                if outer.failures_left:
                    outer.failures_left -= 1
                    status, data = failure_status, b'{"error": {"message": "overloaded"}}'
                else:
                    status, data = respond(body, dict(self.headers))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
