"""The chat API of a served model (careval.backends.openai, ``api: chat``): ``/chat/completions`` with the server's
chat template; generation, and the judge's score distribution from ``top_logprobs`` where the server returns them."""

from __future__ import annotations

import json
from typing import Any

from careval.redaction import redact

from .base import Backend, Capabilities, Sampling, TopStep, Usage
from .endpoint import Endpoint, endpoint_settings
from .http_client import OK, Malformed, Request
from .tokenization import request_seeds, truncate_at_stop


class OpenAICompatBackend(Endpoint, Backend):
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
        settings = endpoint_settings(spec)
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
