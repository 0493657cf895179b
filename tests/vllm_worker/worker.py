"""careval's VLLMBackend in a process of its own, driven by JSON lines (tests/vllm_worker/client.py is the other end).

vLLM pins its own transformers (and torch build), so it runs in the vllm venv
(tests/vllm_worker/setup_venv.sh), with the clone's ``src`` on PYTHONPATH so that the code
under test is the clone's::

    PYTHONPATH=<repo>/src <vllm venv>/bin/python tests/vllm_worker/worker.py '<the model spec's fields as JSON>'

It starts one engine (``VLLMBackend.from_spec``, as a job builds it from its careval.models.spec.ModelSpec;
the spec's fields arrive as JSON), writes one line describing the
backend, then answers each request line until stdin closes::

    {"call": "loglikelihood", "args": [[["context", "continuation"]]], "kwargs": {}}
    -> {"result": [-3.2]}   or   {"error": "<traceback>"}

``call`` names a backend method or an attribute path below the backend ("tokenizer.encode"),
so a new backend method needs no change here. ``{"__sampling__": {...}}`` in the arguments
becomes a careval Sampling. Replies go to the original stdout; everything else the process and
vLLM's engine processes print is sent to stderr, so no log line can break the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback


def decode(value):
    if isinstance(value, dict) and set(value) == {"__sampling__"}:
        from careval.backends import Sampling

        return Sampling(**value["__sampling__"])
    return value


def resolve(backend, path: str):
    target = backend
    for part in path.split("."):
        if part.startswith("_"):
            raise AttributeError(f"{path!r}: private attributes are not callable through the worker")
        target = getattr(target, part)
    return target


def main() -> None:
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stdout (this process and the engine processes it starts) -> stderr
    spec = json.loads(sys.argv[1])
    from types import SimpleNamespace

    from careval.backends.vllm import VLLMBackend

    start = time.perf_counter()
    backend = VLLMBackend.from_spec(SimpleNamespace(**spec))
    started = time.perf_counter() - start
    import torch
    import transformers
    import vllm

    print(f"worker: engine for {spec['name']} started in {started:.1f}s", file=sys.stderr, flush=True)
    replies.write(
        json.dumps(
            {
                "result": {
                    "name": backend.name,
                    "max_length": backend.max_length,
                    "add_bos": backend.add_bos,
                    "engine_start_s": started,
                    "vllm": vllm.__version__,
                    "torch": torch.__version__,
                    "transformers": transformers.__version__,
                }
            }
        )
        + "\n"
    )
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                request = json.loads(line, object_hook=decode)
                function = resolve(backend, request["call"])
                result = function(*request.get("args", []), **request.get("kwargs", {}))
                reply = json.dumps({"result": result})
            except Exception:  # the client raises it, with this traceback, in the test that asked
                reply = json.dumps({"error": traceback.format_exc()})
            replies.write(reply + "\n")
    finally:
        backend.close()


if __name__ == "__main__":  # vLLM starts its engine core in a child process that re-imports __main__
    main()
