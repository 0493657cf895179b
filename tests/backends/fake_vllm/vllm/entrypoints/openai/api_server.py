"""A stand-in for vLLM's OpenAI-compatible server, for the fast tests of the shared engine
(tests/backends/test_vllm_server.py): on PYTHONPATH, `python -m vllm.entrypoints.openai.api_server`
runs this instead of vLLM. It answers what careval.backends.vllm_server sends (the requests of
careval.backends.openai_completions), from a transformers model (the test's tiny Llama) computed
directly here (no careval code):

* ``/v1/models``: the served name (``--served-model-name``), 401 without the key (VLLM_API_KEY);
* ``/v1/completions`` with ``echo`` and ``logprobs`` (and ``max_tokens: 0``): each prompt token's log-probability and
  the most likely token's at its position, the OpenAI completions layout (what every served completions entry sends);
* with ``n``: ``n`` continuations of ``max_tokens`` ids drawn by a ``random.Random(seed)`` (not the
  model: the test checks their ids and log-probabilities travel, not how they were sampled), each
  with the model's log-probability of every drawn token;
* otherwise: the greedy continuation (argmax, stopping at EOS or a stop string), decoded.

Every request body is appended, one JSON line, to FAKE_VLLM_REQUESTS when set; the argv to FAKE_VLLM_ARGV.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

LOCK = __import__("threading").Lock()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args, _ = parser.parse_known_args()
    if os.environ.get("FAKE_VLLM_ARGV"):
        with open(os.environ["FAKE_VLLM_ARGV"], "w") as f:
            json.dump(sys.argv[1:], f)
    key = os.environ.get("VLLM_API_KEY")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model)

    @torch.inference_mode()
    def logprobs(ids):
        logits = model(torch.tensor([ids])).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    def complete(body):
        ids = list(body["prompt"])
        if body.get("echo"):
            logp = logprobs(ids)
            top = [None] + [
                {tokenizer.decode([int(logp[j - 1].argmax())]): float(logp[j - 1].max())} for j in range(1, len(ids))
            ]
            values = [None] + [float(logp[j - 1, ids[j]]) for j in range(1, len(ids))]
            tokens = [tokenizer.decode([i]) for i in ids]
            logprobs_ = {"tokens": tokens, "token_logprobs": values, "top_logprobs": top}
            return [{"index": 0, "text": "", "logprobs": logprobs_}]
        if "n" in body:
            rng, choices = random.Random(body["seed"]), []
            for i in range(body["n"]):
                drawn = [rng.randrange(len(tokenizer)) for _ in range(body["max_tokens"])]
                logp = logprobs(ids + drawn)
                own = [float(logp[len(ids) + k - 1, t]) for k, t in enumerate(drawn)]
                choices.append({"index": i, "text": "", "token_ids": drawn, "logprobs": {"token_logprobs": own}})
            return choices
        out = []
        for _ in range(body["max_tokens"]):
            token = int(logprobs(ids + out)[-1].argmax())
            if token == tokenizer.eos_token_id:
                break
            out.append(token)
            text = tokenizer.decode(out, skip_special_tokens=True)
            if any(s in text for s in body.get("stop") or []):
                break
        text = tokenizer.decode(out, skip_special_tokens=True)
        for s in body.get("stop") or []:
            text = text.split(s)[0]
        return [{"index": 0, "text": text}]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, payload):
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorised(self):
            if key and self.headers.get("Authorization") != f"Bearer {key}":
                self.reply(401, {"error": "Unauthorized"})
                return False
            return True

        def do_GET(self):
            if self.path == "/v1/models" and self.authorised():
                self.reply(200, {"object": "list", "data": [{"id": args.served_model_name}]})
            elif self.path != "/v1/models":
                self.reply(404, {})

        def do_POST(self):
            if self.path != "/v1/completions" or not self.authorised():
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if os.environ.get("FAKE_VLLM_REQUESTS"):
                with LOCK, open(os.environ["FAKE_VLLM_REQUESTS"], "a") as f:
                    f.write(json.dumps(body) + "\n")
            if body.get("model") != args.served_model_name:
                self.reply(404, {"error": f"model {body.get('model')} does not exist"})
                return
            with LOCK:  # one forward pass at a time: torch in threads would only contend here
                choices = complete(body)
            generated = sum(len(tokenizer.encode(c["text"], add_special_tokens=False)) for c in choices)
            usage = {"prompt_tokens": len(body["prompt"]), "completion_tokens": generated}
            self.reply(200, {"object": "text_completion", "choices": choices, "usage": usage})

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
