"""A model served by a shared vLLM server (rule vllm_engine, careval.backends.vllm_serve), used like VLLMBackend.

With ``engine: shared`` one vLLM server per model runs for all the model's LLM jobs of a run (a
Snakemake service job in the group ``llm_<model>``); each job talks to it as to any served model's
completions API: the client is careval.backends.openai_completions.CompletionsBackend (the transport of
careval.backends.http_client: concurrency, retries, timeouts) at the engine's address, with the model's own
tokenizer, so tokenisation stays careval's (tokenization.py) and the server sees the very ids the per-job
engine would: one code path for "an entry served by the run's own engine" and "an entry served elsewhere".
What differs from a served entry: the address and key come from the engine's address file, not the config;
nothing is kept in the transport's request cache (the job's own cache, careval.backends.cached, keeps the
calls, as for the per-job engine), no limits or money; and the results are the per-job engine's, so the
greedy flags are NaN as there (vllm.py has no is_greedy) and the backend is named ``vllm``.

The address file the server job writes (JSON): ``state`` ("ready" once the server answers;
anything else, or no file: not yet), ``url``, ``api_key`` (a fresh one per start: a file left by
an earlier server never reaches a newer one), ``model`` (the served name) and ``max_length``
(the scoring window, vllm.engine_lengths). A job waits for it up to ``start_timeout`` seconds.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from .base import Backend
from .http_client import OK, EndpointClient, EndpointError, Policy, Request
from .openai_completions import CompletionsBackend
from .vllm_base import CAPABILITIES

log = logging.getLogger(__name__)

POLL_S = 2.0


class EngineUnavailableError(RuntimeError):
    """The shared engine did not answer in time, or answered with an error (one line)."""


def read_address(path: Path) -> dict | None:
    """The address file's content once the server says it is ready, else None."""
    try:
        info = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("state") == "ready" else None


def served_models(info: dict, timeout: float = 10.0) -> list[str]:
    """The models the server behind an address file serves (its /v1/models); EndpointError where it does not answer
    (a file left by an earlier server: dead, or another key)."""
    client = EndpointClient(
        f"{info['url'].rstrip('/')}/v1",
        info["api_key"],
        str(info.get("model")),
        Policy(max_concurrency=1, timeout=timeout, max_retries=0),
        scope=None,
    )
    try:
        reply = client.post(Request("/models", {}, lambda p: [m.get("id") for m in p["data"]], method="GET"))
    finally:
        client.close()
    if reply.status != OK:
        raise EndpointError(f"{info['url']}/v1/models: {reply.status}")
    return reply.value


class VLLMServerBackend(CompletionsBackend):
    """careval.backends.base.Backend over a shared vLLM server (see the module docstring)."""

    backend = "vllm"

    def __init__(
        self,
        name: str,
        path: str,
        url_file: str | Path,
        *,
        chat_template: bool = False,
        system_prompt: str | None = None,
        batch_size: int = 1,
        add_bos_token: bool | None = None,
        start_timeout: float = 3600.0,
        request_timeout: float = 3600.0,
        concurrency: int = 16,
    ) -> None:
        self.name, self.path, self.url_file = name, str(path), Path(url_file)
        start = time.perf_counter()
        self.info = self._wait(float(start_timeout))
        self.url, self.served = self.info["url"].rstrip("/"), self.info["model"]
        settings = {
            "api_key": self.info["api_key"],
            # vLLM batches concurrent requests itself (continuous batching): several in flight keep it busy
            "max_concurrency": max(1, int(concurrency)),
            "timeout": float(request_timeout),
            "config_key": f"models.{name}",
        }
        super().__init__(
            name,
            self.served,
            base_url=f"{self.url}/v1",
            tokenizer=f"local:{self.path}",
            chat_template=chat_template,
            system_prompt=system_prompt,
            max_length=int(self.info["max_length"]),
            settings=settings,
            cache_dir=None,
        )
        self.capabilities = CAPABILITIES  # the per-job engine's
        self.batch_size = int(batch_size)
        self.add_bos = None if add_bos_token is None else bool(add_bos_token)  # as the hf backend
        self.request_timeout = float(request_timeout)
        # one line per job: the logs count connections here and engine starts in the vllm_engine log
        print(f"using the shared vLLM engine of {name} at {self.url} (waited {time.perf_counter() - start:.1f}s)")

    @classmethod
    def from_spec(cls, spec: Any) -> VLLMServerBackend:
        """The client of the shared engine serving a job (ModelSpec.for_job gave it the engine's address file)."""
        return cls(
            spec.name,
            spec.path,
            spec.engine_url_file,
            chat_template=spec.chat_template,
            system_prompt=spec.system_prompt,
            batch_size=spec.batch_size,
            start_timeout=float(spec.engine_start_timeout),
        )

    def _wait(self, timeout: float) -> dict:
        """Wait for the address file and a server behind it that knows its key and serves this model."""
        deadline = time.monotonic() + timeout
        last = "no address file yet"
        while True:
            info = read_address(self.url_file)
            if info is not None:
                try:
                    served = served_models(info)
                    if info.get("model") in served:
                        return info
                    last = f"{info['url']} serves {served}, not {info.get('model')!r}"
                except (KeyError, TypeError, EndpointError) as error:
                    # a file left by an earlier server: dead (refused) or another key (401); wait for the new one
                    last = f"{info.get('url')}: {error}"
            if time.monotonic() >= deadline:
                raise EngineUnavailableError(
                    f"{self.name}: no shared vLLM engine answered within {timeout:.0f}s "
                    f"(address file {self.url_file}: {last}; see the vllm_engine log)"
                )
            time.sleep(POLL_S)

    def greedy_flags(self, pairs: list[tuple[str, str]]) -> list[float]:
        """NaN, as the per-job engine (its results are the shared engine's)."""
        return Backend.greedy_flags(self, pairs)

    def close(self) -> None:
        """The client's line and connections; the server belongs to the vllm_engine job (Snakemake stops it)."""
        super().close()

    def __repr__(self) -> str:
        return (
            f"VLLMServerBackend(name={self.name!r}, url={getattr(self, 'url', None)!r}, max_length={self.max_length})"
        )
