"""Backend ``openai``: a served model behind an OpenAI-compatible /v1/chat/completions endpoint (GPT-4, vLLM serve,
...), via urllib. Generation only: the chat API returns no prompt log-probabilities."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from careval.redaction import redact, register_secret

from .base import Backend, Capabilities, Sampling, Usage
from .chat import SYSTEM_DELIMITER, maybe_delimit
from .registry import register_backend
from .tokenization import truncate_at_stop

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class EndpointError(RuntimeError):
    """A request the endpoint refused or answered with something that is not a chat completion (one line)."""


# The chat API returns no prompt log-probabilities and applies the model's chat template itself.
CAPABILITIES = Capabilities(prompt_logprobs=False, top_logprobs=False, chat_template=False, max_gpus=0)


@register_backend("openai", CAPABILITIES)
def load(spec: Any) -> Backend:
    return OpenAICompatBackend.from_spec(spec)


class OpenAICompatBackend(Backend):
    """``generate`` through the chat-completions API; a log-likelihood request is a one-line CapabilityError.

    Scoring (MCQA, perplexity) needs a local backend; this one serves generation-only jobs such as the
    CareQA translation and rephrasing, and a judge without a score distribution.
    The chat template is the server's: a prompt is sent as one user message (after the system
    prompt, if any). Transient failures (HTTP 429 and 5xx, a dropped connection) are retried with
    exponential backoff; anything else stops the job with one line naming the endpoint and status.
    The key must be set before anything is sent (an unset key would surface as the server's 401);
    it is never written anywhere: every error excerpt and reply passes through careval.redaction.
    `config_key` is where the entry lives in the config (`models.<name>`, `careqa.translator.endpoint`),
    for the messages.
    """

    backend = "openai"
    capabilities = CAPABILITIES

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
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        # The key is read from the environment, never from a config file that may be committed.
        self.api_key = os.environ.get(api_key_env, "")
        if not self.api_key:
            raise EndpointError(
                f"{config_key or f'models.{name}'}.api_key_env: {api_key_env} is not set (export the key; "
                f"a server that needs none accepts any value, e.g. {api_key_env}=EMPTY)"
            )
        register_secret(self.api_key)
        try:  # an HTTP header carries Latin-1 only: a key pasted with a typographic quote or a Cyrillic letter
            self.api_key.encode("latin-1")
        except UnicodeEncodeError as error:
            raise EndpointError(
                f"{config_key or f'models.{name}'}.api_key_env: the value of {api_key_env} has a character an HTTP "
                f"header cannot carry (character {error.start + 1} of {len(self.api_key)} is not Latin-1); "
                "set it to the key exactly as issued"
            ) from None
        self.system_prompt = system_prompt
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = max(1, concurrency)
        self.max_length = max_length

    @classmethod
    def from_spec(cls, spec: Any) -> OpenAICompatBackend:
        """The client of an endpoint spec (careval.models.spec.endpoint_spec: `path` is the served model id)."""
        endpoint = spec.endpoint
        return cls(
            name=spec.name,
            model=spec.path,
            base_url=endpoint.get("base_url"),
            api_key_env=endpoint["api_key_env"],
            system_prompt=spec.system_prompt or None,
            concurrency=int(endpoint["concurrency"]),
            config_key=endpoint.get("config_key"),
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request_body(self, prompt: str, sampling: Sampling, instruction: str | None = None) -> dict[str, Any]:
        # the system turn as a local backend's chat template gets it (careval.backends.chat.format_prompt)
        system = maybe_delimit(self.system_prompt, instruction, SYSTEM_DELIMITER)
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "seed": sampling.seed,
        }
        if not sampling.greedy:
            body["top_p"] = sampling.top_p
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"}
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as error:
                retryable = error.code == 429 or error.code >= 500
                if not retryable or attempt == self.max_retries:
                    # redacted before it is cut: a key straddling the cut would leave its first part
                    detail = redact(error.read().decode("utf-8", "replace"))[:200].replace("\n", " ")
                    raise EndpointError(f"{self.url}: HTTP {error.code} for model {self.model!r}: {detail}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                if attempt == self.max_retries:
                    reason = getattr(error, "reason", error)
                    raise EndpointError(f"{self.url}: unreachable ({redact(str(reason))})") from None
            except json.JSONDecodeError:
                raise EndpointError(f"{self.url}: the response is not JSON") from None
            time.sleep(min(2**attempt, 30))
        raise AssertionError("unreachable")

    def _complete(self, prompt: str, sampling: Sampling, instruction: str | None = None) -> tuple[str, Usage]:
        reply = self._post(self.request_body(prompt, sampling, instruction))
        counted = reply.get("usage") if isinstance(reply, dict) else None
        counted = counted if isinstance(counted, dict) else {}
        usage = Usage(int(counted.get("prompt_tokens") or 0), int(counted.get("completion_tokens") or 0))
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"{self.url}: no choices[0].message.content in the response") from None
        # A refusal or a filtered completion can come back as null: an empty output, counted downstream.
        # Servers honour `stop` differently (some keep the stop string); cut here as the local backends do.
        # Redacted too: a server echoing the request into its reply must not put the key into results/.
        return truncate_at_stop(redact(content or ""), sampling.stop), usage

    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            # map keeps the input order whatever order the requests finish in.
            replies = list(pool.map(lambda prompt: self._complete(prompt, sampling, instruction), prompts))
        self.last_usage = [usage for _, usage in replies]  # the server's count (0 where it gives none)
        return [text for text, _ in replies]
