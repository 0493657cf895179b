"""A model served by a shared vLLM server (rule vllm_engine, careval.backends.vllm_serve), used like VLLMBackend.

With ``engine: shared`` one vLLM server per model runs for all the model's LLM jobs of a run (a
Snakemake service job in the group ``llm_<model>``); each job talks to it through vLLM's
OpenAI-compatible ``/v1/completions`` with token-id prompts, so tokenisation stays careval's (this
process's tokenizer, tokenization.py) and the server sees the very ids the per-job engine would.
Each VLLMBackend call becomes the same request: a greedy or seeded generation per prompt,
``prompt_logprobs: 0`` with ``max_tokens: 1`` for every scored position, ``n`` seeded samples with
``min_tokens`` and their token ids (``return_token_ids``) and log-probabilities for Relaxed Perplexity.
The class shares VLLMBackend's requests (vllm_base.py: log-likelihood, rolling, formatting, Relaxed Perplexity), minus the engine.

The address file the server job writes (JSON): ``state`` ("ready" once the server answers;
anything else, or no file: not yet), ``url``, ``api_key`` (a fresh one per start: a file left by
an earlier server never reaches a newer one), ``model`` (the served name) and ``max_length``
(the scoring window, vllm.engine_lengths). A job waits for it up to ``start_timeout`` seconds.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .base import Sampling, Usage
from .chat import require_chat_template
from .tokenization import prefix_token_id, request_seeds, scoring_window, truncate_at_stop
from .vllm_base import VLLMRequests

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


class VLLMServerBackend(VLLMRequests):
    """careval.backends.base.Backend over a shared vLLM server (see the module docstring)."""

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
        from transformers import AutoTokenizer

        self.name = name
        self.path = str(path)
        self.chat_template = bool(chat_template)
        self.system_prompt = system_prompt
        self.batch_size = int(batch_size)
        self.url_file = Path(url_file)
        self.request_timeout = float(request_timeout)
        # vLLM batches concurrent requests itself (continuous batching): several in flight keep it busy
        self.concurrency = max(1, int(concurrency))
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        if self.chat_template:
            require_chat_template(self.tokenizer)
        self.add_bos = None if add_bos_token is None else bool(add_bos_token)  # as the hf backend
        self.prefix_id = prefix_token_id(self.tokenizer)
        self.llm = None  # no engine in this process
        start = time.perf_counter()
        self.info = self._connect(float(start_timeout))
        self.url, self.api_key, self.served = self.info["url"].rstrip("/"), self.info["api_key"], self.info["model"]
        self.max_length = int(self.info["max_length"])
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

    @property
    def gpus(self) -> int:
        return 0  # the server's (the vllm_engine job holds them)

    def _connect(self, timeout: float) -> dict:
        """Wait for the address file and a server behind it that knows its key and serves this model."""
        deadline = time.monotonic() + timeout
        last = "no address file yet"
        while True:
            info = read_address(self.url_file)
            if info is not None:
                try:
                    models = self._request("GET", f"{info['url'].rstrip('/')}/v1/models", None, info["api_key"], 10)
                    served = [m.get("id") for m in models.get("data", [])]
                    if info.get("model") in served:
                        return info
                    last = f"{info['url']} serves {served}, not {info.get('model')!r}"
                except (OSError, ValueError, KeyError, EngineUnavailableError) as error:
                    # a file left by an earlier server: dead (refused) or another key (401); wait for the new one
                    last = f"{info.get('url')}: {error}"
            if time.monotonic() >= deadline:
                raise EngineUnavailableError(
                    f"{self.name}: no shared vLLM engine answered within {timeout:.0f}s "
                    f"(address file {self.url_file}: {last}; see the vllm_engine log)"
                )
            time.sleep(POLL_S)

    @staticmethod
    def _request(method: str, url: str, body: dict | None, key: str, timeout: float) -> dict:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:300].replace("\n", " ")
            raise EngineUnavailableError(f"{url}: HTTP {error.code}: {detail}") from None

    def close(self) -> None:
        """Nothing to free here: the server belongs to the vllm_engine job (Snakemake stops it)."""

    def __repr__(self) -> str:
        return (
            f"VLLMServerBackend(name={self.name!r}, url={getattr(self, 'url', None)!r}, max_length={self.max_length})"
        )

    # ------------------------------------------------------------------ requests
    def _complete(self, body: dict) -> list[dict]:
        reply = self._request(
            "POST", f"{self.url}/v1/completions", {"model": self.served, **body}, self.api_key, self.request_timeout
        )
        try:
            return sorted(reply["choices"], key=lambda c: c["index"])
        except (KeyError, TypeError):
            raise EngineUnavailableError(f"{self.url}: no choices in the completion reply") from None

    def _map(self, bodies: list[dict]) -> list[list[dict]]:
        if not bodies:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(bodies))) as pool:
            return list(pool.map(self._complete, bodies))  # map keeps the input order

    def _prompt_logprobs(self, sequences: list[list[int]]) -> list[list[Any]]:  # position 0: None
        bodies = [{"prompt": list(s), "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0} for s in sequences]
        return [choices[0]["prompt_logprobs"] for choices in self._map(bodies)]

    # ------------------------------------------------------------------ the engine calls of VLLMBackend
    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        texts = [self.format(p, instruction) for p in prompts]
        room = self.max_length - sampling.max_new_tokens
        bodies = []
        for ids, seed in zip(self.generation_ids(texts, room), request_seeds(sampling.seed, texts)):
            body: dict[str, Any] = {
                "prompt": ids,
                "max_tokens": sampling.max_new_tokens,
                "temperature": sampling.temperature,
                "top_p": sampling.top_p if not sampling.greedy else 1.0,
                "skip_special_tokens": True,
                "return_token_ids": True,  # the tokens it generated, for the outputs' counts
            }
            if not sampling.greedy:
                body["seed"] = seed
            if sampling.stop:
                body["stop"] = list(sampling.stop)
            bodies.append(body)
        replies = self._map(bodies)
        self.last_usage = [Usage(len(b["prompt"]), len(c[0].get("token_ids") or [])) for b, c in zip(bodies, replies)]
        return [truncate_at_stop(choices[0]["text"], sampling.stop) for choices in replies]

    def sample_token_ids(
        self, prompt_ids: list[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[tuple[list[int], float]]:
        """As VLLMBackend.sample_token_ids; the joint log-probability is the sum of the sampled tokens' own."""
        body = {
            "prompt": list(prompt_ids),
            "n": n,
            "max_tokens": max_tokens,
            "min_tokens": max_tokens,
            "temperature": 1.0,
            "top_p": top_p,
            "seed": seed,
            "logprobs": 0,
            "return_token_ids": True,
        }
        return [(list(c["token_ids"]), float(sum(c["logprobs"]["token_logprobs"]))) for c in self._complete(body)]

    def token_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        return [
            [float(lp[pos][str(seq[pos])]["logprob"]) for pos in range(start, len(seq))]
            for seq, start, lp in zip(sequences, starts, self._prompt_logprobs(sequences))
        ]

    def score_tokens(self, requests: list[tuple[list[int], list[int]]]) -> list[float]:
        items = [scoring_window(c, x, self.max_length) for c, x in requests]
        results = []
        for (tokens, n_cont), logprobs in zip(items, self._prompt_logprobs([t for t, _ in items])):
            results.append(
                float(
                    sum(logprobs[pos][str(tokens[pos])]["logprob"] for pos in range(len(tokens) - n_cont, len(tokens)))
                )
            )
        return results
