"""An endpoint's limits hold across processes (careval.backends.limits): real processes, each with its own client, send
requests to one fake server on loopback that records when each request arrived, when it was answered and its tokens;
the limits are checked on the server's own records, not on what the clients say they did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from careval.backends.limits import SLACK_S, SharedLimits, endpoint_folder

# A job of its own: its client (careval.backends.http_client) sends `n` requests of `tokens` (prompt ids, max_tokens)
# through `slots` concurrency threads, with the endpoint's limits shared (a folder) or its own (none).
WORKER = textwrap.dedent(
    """
    import json, sys
    from careval.backends.base import Usage
    from careval.backends.http_client import EndpointClient, Policy, Request
    from careval.backends.limits import SharedLimits, endpoint_folder
    job = json.loads(sys.argv[1])
    policy = Policy(max_concurrency=job["threads"], requests_per_minute=job["rpm"], tokens_per_minute=job["tpm"],
                    window=job["window"], max_retries=0, timeout=120)
    limits = None
    if job["folder"]:
        limits = SharedLimits(endpoint_folder(job["folder"], job["url"], "m"), job["slots"], policy.requests_per_minute,
                              policy.tokens_per_minute, window=policy.window)
    client = EndpointClient(job["url"], "EMPTY", "m", policy, scope=None, limits=limits)
    requests = [Request("/completions", {"model": "m", "prompt": [1] * p, "max_tokens": g, "job": job["name"],
                                         "hang": job.get("hang", False)},
                        lambda payload: payload["choices"][0]["text"], Usage(p, g))
                for p, g in job["sizes"]]
    replies = client.post_all(requests)
    client.close()
    print(json.dumps([r.status for r in replies]))
    """
)


class RecordingServer:
    """A completions server that answers after `delay` seconds (never, for a body with "hang") and records each
    request's arrival, its answer's time and its tokens (prompt + max_tokens); `peak`: the most in flight at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.records: list[dict] = []
        self.in_flight = self.peak = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                arrived = time.time()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    outer.in_flight += 1
                    outer.peak = max(outer.peak, outer.in_flight)
                    record = {
                        "job": body["job"],
                        "arrived": arrived,
                        "tokens": len(body["prompt"]) + body["max_tokens"],
                    }
                    outer.records.append(record)
                try:
                    time.sleep(3600 if body.get("hang") else delay)
                finally:
                    # counted out before the answer is sent: a client lets its slot go once it has read the answer,
                    # and the next request may arrive before this thread runs again; so the server's count is within
                    # the time the client holds its slot, and a peak over the limit is the clients' own
                    with lock:
                        outer.in_flight -= 1
                        record["answered"] = time.time()
                data = json.dumps({"choices": [{"text": "ok"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a hanging request's thread dies with the test
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server_factory():
    made: list[RecordingServer] = []

    def make(delay: float = 0.0) -> RecordingServer:
        made.append(RecordingServer(delay))
        return made[-1]

    yield make
    for server in made:
        server.close()


def start(url: str, name: str, folder: Path | None, sizes, *, threads=4, slots=3, rpm=None, tpm=None, window=60.0,
          hang=False) -> subprocess.Popen:  # fmt: skip
    job = {"url": url, "name": name, "folder": str(folder) if folder else None, "sizes": sizes, "threads": threads,
           "slots": slots, "rpm": rpm, "tpm": tpm, "window": window, "hang": hang}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, json.dumps(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen, timeout: float = 60) -> list[str]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out)


def most_in_any_window(records: list[dict], window: float) -> tuple[int, int]:
    """The most requests and tokens that arrived in any `window` seconds (brute force over every window that starts at
    an arrival: a window's count only grows until its first arrival)."""
    times = sorted((r["arrived"], r["tokens"]) for r in records)
    most_requests = most_tokens = 0
    for start_at, _ in times:
        inside = [n for t, n in times if start_at <= t < start_at + window]
        most_requests, most_tokens = max(most_requests, len(inside)), max(most_tokens, sum(inside))
    return most_requests, most_tokens


def test_three_jobs_together_stay_within_the_endpoints_concurrency(server_factory, tmp_path):
    server = server_factory(delay=0.15)
    jobs = [start(server.url, f"job{i}", tmp_path / "limits", [(10, 5)] * 10, threads=4, slots=3) for i in range(3)]
    assert all(finish(job) == ["ok"] * 10 for job in jobs)
    assert len(server.records) == 30
    # each job alone may have 4 in flight (its threads): 12 together without the shared slots
    assert server.peak == 3, server.peak
    print(f"\nconcurrency: max in flight at the server {server.peak} (limit 3; 3 jobs x 4 threads)")


def test_without_the_shared_folder_each_job_keeps_its_own_limits(server_factory):
    """The control: per-job limits let three jobs together past the endpoint's (what the shared folder prevents). Each
    request is answered after half a second, so that a job's four overlap at the server even on a busy machine."""
    server = server_factory(delay=0.5)
    jobs = [start(server.url, f"job{i}", None, [(10, 5)] * 4, threads=4, rpm=5, window=30) for i in range(3)]
    assert all(finish(job) == ["ok"] * 4 for job in jobs)
    assert server.peak > 3 and most_in_any_window(server.records, 30)[0] == 12


def test_three_jobs_together_stay_within_the_endpoints_request_and_token_rates(server_factory, tmp_path):
    """A 1-second window stands for the minute (Policy.window): 5 requests and 120 tokens in any window, by the
    server's clock; requests of 20 to 50 tokens, so that either limit holds a request back in turn."""
    server = server_factory(delay=0.0)
    window, rpm, tpm = 1.0, 5, 120
    sizes = [[(10, 10), (30, 20), (15, 5), (10, 10), (25, 15)] for _ in range(3)]
    began = time.monotonic()
    jobs = [
        start(server.url, f"job{i}", tmp_path / "limits", sizes[i], threads=3, slots=8, rpm=rpm, tpm=tpm, window=window)
        for i in range(3)
    ]
    assert all(finish(job) == ["ok"] * 5 for job in jobs)
    took = time.monotonic() - began
    requests, tokens = most_in_any_window(server.records, window)
    total = sum(r["tokens"] for r in server.records)
    print(
        f"\nrates: most in any {window}s window at the server: {requests} requests (limit {rpm}), {tokens} tokens "
        f"(limit {tpm}); 15 requests, {total} tokens in {took:.1f}s"
    )
    assert len(server.records) == 15 and total == 3 * 150
    assert requests <= rpm and tokens <= tpm
    # the limits did bind: 450 tokens at 120 a window need 4 windows (each a window and a second: SLACK_S)
    assert took >= 3 * (window + SLACK_S) and tokens > tpm // 2


def test_a_killed_job_frees_its_slots(server_factory, tmp_path):
    server = server_factory(delay=0.05)
    folder = tmp_path / "limits"
    stuck = start(server.url, "stuck", folder, [(10, 5)] * 2, threads=2, slots=2, hang=True)
    deadline = time.monotonic() + 30
    while server.in_flight < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.in_flight == 2  # both slots taken by requests the server never answers
    limits = SharedLimits(endpoint_folder(folder, server.url, "m"), 2)
    assert limits.in_flight() == 2
    waiting = start(server.url, "waiting", folder, [(10, 5)] * 4, threads=2, slots=2)
    time.sleep(1.0)
    assert not [r for r in server.records if r["job"] == "waiting"]  # no slot for it while the stuck job lives
    os.kill(stuck.pid, signal.SIGKILL)
    stuck.wait(10)
    began = time.monotonic()
    assert finish(waiting, timeout=30) == ["ok"] * 4
    print(
        f"\nkilled job: its 2 slots freed, the waiting job's 4 requests answered {time.monotonic() - began:.2f}s later"
    )
    assert limits.in_flight() == 0


def test_shared_limits_count_in_one_window_across_instances(tmp_path):
    """Two clients' SharedLimits on one folder (two jobs) see each other's requests; the window lapses on a test clock."""
    now = [1000.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    a = SharedLimits(tmp_path, 2, requests=2, tokens=100, clock=lambda: now[0], sleep=sleep)
    b = SharedLimits(tmp_path, 2, requests=2, tokens=100, clock=lambda: now[0], sleep=sleep)
    assert a.acquire(40) == 0.0 and b.acquire(40) == 0.0
    waited = a.acquire(10)  # the third request of the minute waits for the first to lapse (a minute and a second)
    assert waited == pytest.approx(61.0, abs=0.05) and slept
    now[0] += 61.0
    assert b.acquire(150) == 0.0  # larger than the whole token limit: alone, in an empty window


def test_a_limits_folder_that_cannot_be_written_leaves_the_job_its_own_limits(tmp_path, monkeypatch, capsys):
    from careval.backends.openai import OpenAICompatBackend

    monkeypatch.setenv("CAREVAL_TEST_KEY", "EMPTY")
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    settings = {"limits": str(tmp_path / "cache" / "limits"), "requests_per_minute": 5}
    backend = OpenAICompatBackend("gpt", "gpt-x", "http://127.0.0.1:9/v1", "CAREVAL_TEST_KEY", settings=settings)
    assert backend.client.limits is None and backend.client.limit.requests == 5  # the job's own window
    assert "limits hold for this job alone" in capsys.readouterr().out
    settings["limits"] = str(tmp_path / "limits")
    shared = OpenAICompatBackend("gpt", "gpt-x", "http://127.0.0.1:9/v1", "CAREVAL_TEST_KEY", settings=settings)
    assert shared.client.limits is not None
    assert shared.client.limits.folder == endpoint_folder(tmp_path / "limits", "http://127.0.0.1:9/v1", "gpt-x")
