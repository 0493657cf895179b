"""Backend ``openai``: a model served behind an OpenAI-compatible API (vLLM serve, SGLang, TGI, llama.cpp's server, a
hosted API), as a model entry's ``endpoint:`` or a CareQA step's (README, "Evaluate a served or API model").

Two APIs, by the endpoint's ``api``:

* ``chat`` (:class:`OpenAICompatBackend`): ``/chat/completions``, the server's chat template; a prompt is one user
  message after the system turn (the entry's system prompt and the task's instruction, as a local chat template gets
  them). Generation, and the judge's score distribution from ``top_logprobs`` where the server returns them.
* ``completions`` (:class:`CompletionsBackend`): ``/completions`` with careval's own token ids (the entry's
  ``tokenizer:``, a hub repo or a local folder of the served model, else the server's ``/tokenize``): the same ids
  the hf and vLLM backends compute with (careval.backends.tokenization), prompt log-probabilities from ``echo`` +
  ``logprobs`` (the OpenAI completions API's own, which vLLM serves), so every family runs: MCQA, perplexities,
  Relaxed Perplexity (its samples need a vLLM-compatible server: ``min_tokens`` and ``return_token_ids``), and
  the judge's distribution as on a local model.

The transport (careval.backends.http_client): concurrency, rate limits, retries with backoff and jitter honouring
``Retry-After``, a bounded time per request, every answered request in the request cache as it arrives, a malformed
reply after the retries counted per sample (``last_status``), the budget (careval.backends.budget). The key is read
from the environment variable the entry names, never from the config, and never written anywhere.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

from careval.redaction import redact, register_secret
from careval.request_cache import RequestCache

from .base import Backend, Capabilities, CapabilityError, Sampling, TopStep, Usage
from .budget import Ledger
from .chat import SYSTEM_DELIMITER, maybe_delimit
from .limits import SharedLimits, endpoint_folder
from .http_client import OK, EndpointClient, EndpointError, Malformed, Policy, Reply, Request
from .registry import register_backend
from .tokenization import (
    DEFAULT_MAX_LENGTH,
    encode_pair,
    prefix_token_id,
    request_seeds,
    scoring_window,
    truncate_at_stop,
)
from .vllm_base import VLLMRequests

__all__ = ["CompletionsBackend", "EndpointError", "OpenAICompatBackend", "spec_capabilities"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOP = 5  # the alternatives asked per generated step (OpenAI's completions API gives at most 5)

# The most an endpoint can do; spec_capabilities says what one entry's API does.
CAPABILITIES = Capabilities(prompt_logprobs=True, top_logprobs=True, chat_template=True, max_gpus=0)


def spec_capabilities(spec: Any) -> Capabilities:
    """An endpoint's capabilities by its API: the completions API with token ids has prompt log-probabilities (and a
    chat template of careval's, with a tokenizer named in the entry); the chat API generates, with top_logprobs."""
    endpoint = spec.endpoint or {}
    completions = endpoint.get("api") == "completions"
    named = str(endpoint.get("tokenizer") or "").startswith(("hf:", "local:"))
    return Capabilities(
        prompt_logprobs=completions,
        top_logprobs=bool(endpoint.get("top_logprobs", True)),
        chat_template=completions and named,
        max_gpus=0,
    )


@register_backend("openai", CAPABILITIES, spec_capabilities)
def load(spec: Any) -> Backend:
    if (spec.endpoint or {}).get("api") == "completions":
        return CompletionsBackend.from_spec(spec)
    return OpenAICompatBackend.from_spec(spec)


def read_key(api_key_env: str, where: str) -> str:
    """The key from the environment, checked before anything is sent (an unset key would be the server's 401)."""
    key = os.environ.get(api_key_env, "")
    if not key:
        raise EndpointError(
            f"{where}.api_key_env: {api_key_env} is not set (export the key; "
            f"a server that needs none accepts any value, e.g. {api_key_env}=EMPTY)"
        )
    register_secret(key)
    try:  # an HTTP header carries Latin-1 only: a key pasted with a typographic quote or a Cyrillic letter
        key.encode("latin-1")
    except UnicodeEncodeError as error:
        raise EndpointError(
            f"{where}.api_key_env: the value of {api_key_env} has a character an HTTP header "
            f"cannot carry (character {error.start + 1} of {len(key)} is not Latin-1); set it to the key exactly as issued"
        ) from None
    return key


class _Endpoint:
    """What both APIs share: the key, the client (careval.backends.http_client), the log's line."""

    name: str
    model: str
    base_url: str
    client: EndpointClient
    last_usage: Sequence[Usage]
    last_status: Sequence[str]
    last_reused: int
    last_paid: Sequence[Usage] | None

    def _connect(
        self, name: str, model: str, base_url: str | None, settings: dict[str, Any], cache: str | None
    ) -> None:
        where = settings.get("config_key") or f"models.{name}"
        self.name, self.model, self.config_key = name, model, where
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = read_key(settings.get("api_key_env") or "OPENAI_API_KEY", where)
        policy = Policy(
            max_concurrency=max(1, int(settings.get("concurrency") or settings.get("max_concurrency") or 8)),
            requests_per_minute=settings.get("requests_per_minute"),
            tokens_per_minute=settings.get("tokens_per_minute"),
            timeout=float(settings.get("timeout") or 120.0),
            max_retries=int(settings["max_retries"]) if settings.get("max_retries") is not None else 6,
            backoff=float(settings["backoff"]) if settings.get("backoff") is not None else 1.0,
            max_backoff=float(settings["max_backoff"]) if settings.get("max_backoff") is not None else 60.0,
        )
        price = settings.get("price")
        price = (float(price["input_per_mtok"]), float(price["output_per_mtok"])) if price else None
        ledger = None
        if settings.get("max_cost") is not None and price is not None:
            longest = (policy.max_retries + 1) * (policy.timeout + policy.max_backoff) + 60
            ledger = Ledger(settings["ledger"], float(settings["max_cost"]), where, hold_s=longest)
        limits = None
        if settings.get("limits"):  # the endpoint's limits, held with every other process sending it requests
            limits = SharedLimits(
                endpoint_folder(settings["limits"], self.base_url, model),
                policy.max_concurrency,
                policy.requests_per_minute,
                policy.tokens_per_minute,
                window=policy.window,
                describe={"base_url": self.base_url, "model": model},
            )
        # what decides an answer: the address, the served model, the API and the ids' tokenizer (not the key)
        scope = {"base_url": self.base_url, "model": model, "api": settings.get("api", "chat")}
        self.client = EndpointClient(
            self.base_url,
            self.api_key,
            model,
            policy,
            scope=scope,
            cache=RequestCache(cache) if cache else None,
            price=price,
            ledger=ledger,
            limits=limits,
            who=where,
        )
        self.concurrency = policy.max_concurrency
        self.max_retries, self.timeout = policy.max_retries, policy.timeout
        self.last_usage, self.last_status, self.last_reused, self.last_paid = [], (), 0, None

    @property
    def gpus(self) -> int:
        return 0  # the server's

    def _record(self, replies: Sequence[Reply]) -> None:
        """The call's usage, statuses and what was read from the request cache (careval.backends.cached)."""
        self.last_usage = [r.usage for r in replies]
        self.last_paid = [Usage(0, 0) if r.cached else r.usage for r in replies]
        self.last_reused = sum(r.cached for r in replies)
        statuses = [r.status for r in replies]
        self.last_status = statuses if any(s != OK for s in statuses) else ()

    def close(self) -> None:
        if getattr(self, "client", None) is not None:
            print(self.client.report(), flush=True)
            self.client.close()

    def system_turn(self, system_prompt: str | None, instruction: str | None) -> str:
        return maybe_delimit(system_prompt, instruction, SYSTEM_DELIMITER)


def _endpoint_settings(spec: Any) -> dict[str, Any]:
    return {**(spec.endpoint or {}), "api": (spec.endpoint or {}).get("api", "chat")}


class OpenAICompatBackend(_Endpoint, Backend):
    """The chat API (see the module docstring): ``generate`` and ``generate_top_logprobs``; a log-likelihood request is
    a one-line CapabilityError (the plan refuses the families that need one first). `config_key` is where the entry
    lives in the config (`models.<name>`, `careqa.translator.endpoint`), for the messages."""

    backend = "openai"
    capabilities = Capabilities(prompt_logprobs=False, top_logprobs=True, chat_template=False, max_gpus=0)

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        system_prompt: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        concurrency: int = 4,
        max_length: int = 128_000,
        config_key: str | None = None,
        settings: dict[str, Any] | None = None,
        cache_dir: str | None = None,
    ) -> None:
        settings = {
            "api_key_env": api_key_env,
            "timeout": timeout,
            "max_retries": max_retries,
            "concurrency": concurrency,
            "config_key": config_key,
            **(settings or {}),
        }
        self._connect(name, model, base_url, settings, cache_dir)
        self.system_prompt = system_prompt
        self.max_length = max_length
        self.top_logprobs = bool(settings.get("top_logprobs", True))
        self.capabilities = Capabilities(
            prompt_logprobs=False, top_logprobs=self.top_logprobs, chat_template=False, max_gpus=0
        )

    @classmethod
    def from_spec(cls, spec: Any) -> OpenAICompatBackend:
        """The client of an endpoint spec (careval.models.spec.endpoint_spec: `path` is the served model id)."""
        settings = _endpoint_settings(spec)
        return cls(
            name=spec.name,
            model=spec.path,
            base_url=settings.get("base_url"),
            system_prompt=spec.system_prompt or None,
            max_length=spec.max_length or 128_000,
            settings=settings,
            cache_dir=spec.cache_dir,
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request_body(
        self, prompt: str, sampling: Sampling, instruction: str | None = None, seed: int | None = None
    ) -> dict[str, Any]:
        # the system turn as a local backend's chat template gets it (careval.backends.chat.format_prompt)
        system = self.system_turn(self.system_prompt, instruction)
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "seed": sampling.seed if seed is None else seed,
        }
        if not sampling.greedy:
            body["top_p"] = sampling.top_p
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        return body

    def _requests(
        self, prompts: list[str], sampling: Sampling, instruction: str | None, top: int | None
    ) -> list[Request]:
        # sampled: one seed per prompt (its k-th copy another), so that repeated prompts are different requests
        seeds = request_seeds(sampling.seed, prompts) if not sampling.greedy else [None] * len(prompts)
        requests = []
        for prompt, seed in zip(prompts, seeds):
            body = self.request_body(prompt, sampling, instruction, seed)
            if top:
                body["logprobs"], body["top_logprobs"] = True, top
            text = json.dumps(body["messages"])
            # the most it may cost: a prompt's tokens are unknown here, its bytes / 3 bounds them for most tokenizers
            most = Usage(len(text.encode()) // 3 + 16, sampling.max_new_tokens)
            requests.append(Request("/chat/completions", body, _chat_reply(sampling, top is not None), most))
        return requests

    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        replies = self.client.post_all(self._requests(prompts, sampling, instruction, None))
        self._record(replies)
        return [r.value[0] if r.status == OK else "" for r in replies]

    def generate_top_logprobs(
        self, prompts: list[str], sampling: Sampling, top: int, instruction: str | None = None
    ) -> list[tuple[str, list[TopStep]]]:
        if not self.top_logprobs:
            return super().generate_top_logprobs(prompts, sampling, top, instruction)
        if not prompts:
            return []
        replies = self.client.post_all(self._requests(prompts, sampling, instruction, top))
        self._record(replies)
        return [r.value if r.status == OK else ("", []) for r in replies]


def _chat_reply(sampling: Sampling, steps: bool):
    def parse(payload: dict) -> Any:
        choice = payload["choices"][0]
        content = choice["message"]["content"]
        if content is not None and not isinstance(content, str):
            raise Malformed("message.content is not text")
        # A refusal or a filtered completion can come back as null: an empty output, counted downstream. Servers honour
        # `stop` differently (some keep the stop string); cut here as the local backends do. Redacted too: a server
        # echoing the request into its reply must not put the key into results/.
        text = truncate_at_stop(redact(content or ""), sampling.stop)
        if not steps:
            return (text,)
        content_steps = ((choice.get("logprobs") or {}).get("content")) or []
        return text, [
            TopStep(str(step["token"]), {str(t["token"]): float(t["logprob"]) for t in step.get("top_logprobs") or []})
            for step in content_steps
        ]

    return parse


class ServerTokenizer:
    """The served model's tokenizer through the server's ``/tokenize`` and ``/detokenize`` (vLLM's, SGLang's): what
    careval's tokenisation rules (careval.backends.tokenization) ask of a transformers tokenizer. Its special tokens:
    the server's ``/tokenizer_info`` where it has one (vLLM: --enable-tokenizer-info-endpoint), else BOS as what the
    empty text encodes to. No chat template: name the tokenizer in the entry for careval's own."""

    chat_template = None

    def __init__(self, client: EndpointClient, model: str) -> None:
        self.client, self.model, self.name_or_path = client, model, f"{model} (the server's /tokenize)"
        self._memo: dict[tuple[str, bool], list[int]] = {}
        self._decoded: dict[tuple[int, ...], str] = {}
        info = self._info()
        self.bos_token = _token_text(info.get("bos_token"))
        self.eos_token = _token_text(info.get("eos_token"))
        self.bos_token_id = self._special(self.bos_token)
        self.eos_token_id = self._special(self.eos_token)
        if self.bos_token_id is None:
            empty = self.encode("", add_special_tokens=True)
            self.bos_token_id = empty[0] if empty else None
            self.bos_token = self.decode(empty[:1]) if empty else None

    def _info(self) -> dict:
        try:
            reply = self.client.post(Request("/tokenizer_info", {}, lambda p: p, method="GET"))
        except EndpointError:
            return {}  # not served: BOS from the empty text, no EOS
        return reply.value if reply.status == OK and isinstance(reply.value, dict) else {}

    def _special(self, text: str | None) -> int | None:
        if not text:
            return None
        ids = self.encode(text, add_special_tokens=False)
        return ids[0] if len(ids) == 1 else None

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        key = (text, bool(add_special_tokens))
        if key not in self._memo:
            body = {"model": self.model, "prompt": text, "add_special_tokens": bool(add_special_tokens)}
            reply = self.client.post(Request("/tokenize", body, lambda p: [int(t) for t in p["tokens"]]))
            if reply.status != OK:
                raise EndpointError(f"{self.client.base_url}/tokenize: {reply.status} for {text[:40]!r}")
            self._memo[key] = reply.value
        return list(self._memo[key])

    def decode(self, ids: Sequence[int]) -> str:
        key = tuple(int(i) for i in ids)
        if key not in self._decoded:
            body = {"model": self.model, "tokens": list(key)}
            reply = self.client.post(Request("/detokenize", body, lambda p: str(p["prompt"])))
            self._decoded[key] = reply.value if reply.status == OK else ""
        return self._decoded[key]


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):  # a transformers AddedToken as JSON
        value = value.get("content")
    return value if isinstance(value, str) and value else None


class CompletionsBackend(_Endpoint, VLLMRequests):
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
        settings = _endpoint_settings(spec)
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
        return Request("/completions", body, _echo_reply(len(tokens)), Usage(len(tokens), 0))

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
            parse = _completion_reply(sampling, top is not None)
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
            "/completions", body, _samples_reply(self.config_key, n), Usage(len(prompt_ids), n * max_tokens)
        )
        reply = self.client.post(request)
        self._record([reply])
        if reply.status != OK:
            raise EndpointError(f"{self.config_key}: sampling for Relaxed Perplexity got {reply.status}")
        return reply.value


def _root(base_url: str) -> str:
    """The server's root (where vLLM serves /tokenize): the base URL without its /v1."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def _echo_reply(length: int):
    def parse(payload: dict) -> tuple[list[float], list[list[float]]]:
        logprobs = payload["choices"][0]["logprobs"]
        values, tops = logprobs["token_logprobs"], logprobs.get("top_logprobs") or [None] * length
        if len(values) != length or len(tops) != length:
            raise Malformed(f"{len(values)} prompt log-probabilities for {length} tokens")
        scored = [0.0] + [float(v) for v in values[1:]]  # the first token has none
        if any(not math.isfinite(v) for v in scored):
            raise Malformed("a prompt log-probability that is not a number")
        alternatives = [sorted(float(x) for x in (t or {}).values()) for t in tops]
        return scored, alternatives

    return parse


def _completion_reply(sampling: Sampling, steps: bool):
    def parse(payload: dict) -> Any:
        choice = payload["choices"][0]
        text = choice["text"]
        if not isinstance(text, str):
            raise Malformed("choices[0].text is not text")
        text = truncate_at_stop(redact(text), sampling.stop)
        if not steps:
            return (text,)
        logprobs = choice.get("logprobs") or {}
        tokens, tops = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
        return text, [
            TopStep(str(t), {str(k): float(v) for k, v in (top or {}).items()}) for t, top in zip(tokens, tops)
        ]

    return parse


def _samples_reply(where: str, n: int):
    def parse(payload: dict) -> list[tuple[list[int], float]]:
        choices = sorted(payload["choices"], key=lambda c: c["index"])
        if len(choices) != n:
            raise Malformed(f"{len(choices)} samples for n={n}")
        out = []
        for choice in choices:
            ids = choice.get("token_ids")
            if ids is None:
                raise CapabilityError(
                    f"{where}: the server returns no token ids of its samples (return_token_ids): Relaxed Perplexity "
                    "needs a vLLM-compatible completions API"
                )
            values = choice["logprobs"]["token_logprobs"]
            if len(values) != len(ids):
                raise Malformed(f"{len(values)} log-probabilities for {len(ids)} sampled tokens")
            out.append(([int(i) for i in ids], float(sum(values))))
        return out

    return parse
