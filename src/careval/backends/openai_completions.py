"""The completions API of a served model (careval.backends.openai, ``api: completions``): ``/completions`` with
careval's own token ids (the entry's ``tokenizer:``, else the server's ``/tokenize``: careval.backends.openai_tokenizer)
and prompt log-probabilities from ``echo`` + ``logprobs`` (read by careval.backends.openai_replies), so every family
runs. The shared vLLM engine's client (careval.backends.vllm_server) is one of these, at the engine's address."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .base import Capabilities, CapabilityError, Sampling, TopStep, Usage
from .endpoint import TOP, Endpoint, endpoint_settings
from .http_client import OK, EndpointClient, EndpointError, Policy, Reply, Request
from .openai_replies import completion_reply, echo_reply, samples_reply
from .openai_tokenizer import ServerTokenizer
from .tokenization import DEFAULT_MAX_LENGTH, encode_pair, prefix_token_id, request_seeds, scoring_window
from .vllm_base import VLLMRequests

# The most a completions endpoint can do (with a tokenizer named in the entry: its chat template too).
CAPABILITIES = Capabilities(prompt_logprobs=True, top_logprobs=True, chat_template=True, max_gpus=0)


class CompletionsBackend(Endpoint, VLLMRequests):
    """The completions API with careval's token ids (see the module docstring): every request of the Backend interface,
    on VLLMRequests' rules (the shared engine's client sends the same requests to vLLM's own server)."""

    backend = "openai"
    capabilities = CAPABILITIES

    def __init__(
        self,
        name: str,
        model: str,
        *,
        base_url: str | None,
        tokenizer: str | None,
        chat_template: bool = False,
        system_prompt: str | None = None,
        max_length: int | None = None,
        settings: dict[str, Any] | None = None,
        cache_dir: str | None = None,
    ) -> None:
        settings = {"api": "completions", **(settings or {})}
        self._connect(name, model, base_url, settings, cache_dir)
        self.chat_template, self.system_prompt = bool(chat_template), system_prompt
        self.batch_size, self.add_bos, self.llm = 1, None, None
        self.tokenizer_source = tokenizer or "server"
        self.capabilities = Capabilities(
            prompt_logprobs=True,
            top_logprobs=bool(settings.get("top_logprobs", True)),
            chat_template=self.tokenizer_source != "server",
            max_gpus=0,
        )
        # the ids' tokenizer is part of what decides an answer (the body holds its ids already; named for clarity)
        self.client.scope = {**self.client.scope, "tokenizer": self.tokenizer_source}
        config = None
        if self.tokenizer_source == "server":
            if self.chat_template:
                raise CapabilityError(
                    f"{self.config_key}.chat_template: the server's /tokenize gives no chat template: name the served "
                    "model's tokenizer (tokenizer: hf:<repo> or local:<dir>), or use api: chat"
                )
            root = EndpointClient(
                _root(self.base_url),
                self.api_key,
                model,
                Policy(max_concurrency=1, timeout=self.client.policy.timeout, max_retries=2, backoff=0.5),
                scope=None,
                who=self.config_key,
            )
            self.tokenizer: Any = ServerTokenizer(root, model)
        else:
            from transformers import AutoConfig, AutoTokenizer

            from .chat import require_chat_template

            path = self.tokenizer_source.split(":", 1)[1]
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            if self.chat_template:
                require_chat_template(self.tokenizer)
            try:
                config = AutoConfig.from_pretrained(path)
            except (OSError, ValueError):
                config = None  # a tokenizer alone
        self._prefix: int | None = None
        self.max_length = self._max_length(max_length, config)

    @classmethod
    def from_spec(cls, spec: Any) -> CompletionsBackend:
        settings = endpoint_settings(spec)
        return cls(
            spec.name,
            spec.path,
            base_url=settings.get("base_url"),
            tokenizer=settings.get("tokenizer"),
            chat_template=spec.chat_template,
            system_prompt=spec.system_prompt or None,
            max_length=spec.max_length,
            settings=settings,
            cache_dir=spec.cache_dir,
        )

    def _max_length(self, wanted: int | None, config: Any) -> int:
        """The scoring window: the entry's max_length, else the server's context (/models' max_model_len, as vLLM
        gives it) less the 2 tokens vLLM needs beyond a scored window (careval.backends.vllm.engine_lengths), else
        the tokenizer's model config, else 2048."""
        if wanted:
            return int(wanted)
        try:
            reply = self.client.post(Request("/models", {}, lambda p: p, method="GET"))
        except EndpointError:
            reply = None
        served = reply.value.get("data") if reply is not None and isinstance(reply.value, dict) else None
        for entry in served or []:
            if isinstance(entry, dict) and entry.get("id") == self.model and entry.get("max_model_len"):
                return int(entry["max_model_len"]) - 2
        if config is not None:
            from .tokenization import resolve_max_length

            return resolve_max_length(config, self.tokenizer, None)
        return DEFAULT_MAX_LENGTH

    @property
    def prefix_id(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        """The token an empty context stands for (BOS, else EOS); a one-line CapabilityError where the server's
        tokenizer names neither."""
        if self._prefix is None:
            try:
                self._prefix = prefix_token_id(self.tokenizer)
            except ValueError:
                raise CapabilityError(
                    f"{self.config_key}: the server's tokenizer names no BOS or EOS token, which an empty context and a "
                    "rolling log-likelihood start from: name the served model's tokenizer (tokenizer: hf:<repo> or "
                    "local:<dir>), or serve vLLM with --enable-tokenizer-info-endpoint"
                ) from None
        return self._prefix

    def __repr__(self) -> str:
        return f"CompletionsBackend(name={self.name!r}, url={self.base_url!r}, max_length={self.max_length})"

    # ------------------------------------------------------------------ requests
    def _echo(self, tokens: list[int]) -> Request:
        """The prompt log-probabilities of `tokens` (echo, no generation) with each position's most likely token."""
        body = {"model": self.model, "prompt": list(tokens), "max_tokens": 0, "echo": True, "logprobs": 1}
        return Request("/completions", body, echo_reply(len(tokens)), Usage(len(tokens), 0))

    def _echoed(self, sequences: Sequence[list[int]]) -> list[Reply]:
        replies = self.client.post_all([self._echo(s) for s in sequences])
        self._record(replies)
        return replies

    def score_tokens(self, requests: list[tuple[list[int], list[int]]]) -> list[float]:
        items = [scoring_window(c, x, self.max_length) for c, x in requests]
        results = []
        for (tokens, n_cont), reply in zip(items, self._echoed([t for t, _ in items])):
            if reply.status != OK:
                results.append(math.nan)  # counted: the task's invalid_loglik
                continue
            logprobs, _ = reply.value
            results.append(float(sum(logprobs[len(tokens) - n_cont :])))
        return results

    def token_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        out = []
        for seq, start, reply in zip(sequences, starts, self._echoed(sequences)):
            out.append(
                [float(v) for v in reply.value[0][start:]] if reply.status == OK else [math.nan] * (len(seq) - start)
            )
        return out

    def greedy_flags(self, pairs: list[tuple[str, str]]) -> list[float]:
        """lm-eval's is_greedy from the same echo requests as the log-likelihoods (so answered from the request cache
        where they were asked): every continuation token at least as likely as the position's most likely one."""
        requests = [encode_pair(self.tokenizer, c, x, add_bos=self.add_bos) for c, x in pairs]
        items = [scoring_window(c, x, self.max_length) for c, x in requests]
        flags = []
        for (tokens, n_cont), reply in zip(items, self._echoed([t for t, _ in items])):
            if reply.status != OK:
                flags.append(math.nan)
                continue
            logprobs, tops = reply.value
            positions = range(len(tokens) - n_cont, len(tokens))
            if any(not tops[p] for p in positions):
                flags.append(math.nan)  # no alternatives returned: cannot say
                continue
            flags.append(float(all(logprobs[p] >= max(tops[p]) - 1e-6 for p in positions)))
        return flags

    def _generation(self, prompts: list[str], sampling: Sampling, instruction: str | None, top: int | None):
        texts = [self.format(p, instruction) for p in prompts]
        room = self.max_length - sampling.max_new_tokens
        requests = []
        for ids, seed in zip(self.generation_ids(texts, room), request_seeds(sampling.seed, texts)):
            body: dict[str, Any] = {
                "model": self.model,
                "prompt": ids,
                "max_tokens": sampling.max_new_tokens,
                "temperature": sampling.temperature,
            }
            if not sampling.greedy:
                body["top_p"], body["seed"] = sampling.top_p, seed
            if sampling.stop:
                body["stop"] = list(sampling.stop)
            if top:
                body["logprobs"] = top
            parse = completion_reply(sampling, top is not None)
            requests.append(Request("/completions", body, parse, Usage(len(ids), sampling.max_new_tokens)))
        replies = self.client.post_all(requests)
        self._record(replies)
        return replies

    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        return [r.value[0] if r.status == OK else "" for r in self._generation(prompts, sampling, instruction, None)]

    def generate_top_logprobs(
        self, prompts: list[str], sampling: Sampling, top: int, instruction: str | None = None
    ) -> list[tuple[str, list[TopStep]]]:
        if not prompts:
            return []
        replies = self._generation(prompts, sampling, instruction, min(top, TOP))
        return [r.value if r.status == OK else ("", []) for r in replies]

    def sample_token_ids(
        self, prompt_ids: list[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[tuple[list[int], float]]:
        """As VLLMBackend.sample_token_ids: n seeded samples of exactly max_tokens ids (vLLM's min_tokens holds EOS
        back) with their ids (return_token_ids) and joint log-probabilities (each sampled token's)."""
        body = {
            "model": self.model,
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
        request = Request(
            "/completions", body, samples_reply(self.config_key, n), Usage(len(prompt_ids), n * max_tokens)
        )
        reply = self.client.post(request)
        self._record([reply])
        if reply.status != OK:
            raise EndpointError(f"{self.config_key}: sampling for Relaxed Perplexity got {reply.status}")
        return reply.value


def _root(base_url: str) -> str:
    """The server's root (where vLLM serves /tokenize): the base URL without its /v1."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
