"""Backend ``openai``: a model served behind an OpenAI-compatible API (vLLM serve, SGLang, TGI, llama.cpp's server, a
hosted API), as a model entry's ``endpoint:`` or a CareQA step's (docs/served.md).

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

The modules: careval.backends.endpoint (what both APIs share), openai_chat, openai_completions (with openai_replies,
its replies' reading, and openai_tokenizer, the server's /tokenize). The transport (careval.backends.http_client):
concurrency and rate limits (across processes: careval.backends.limits), retries with backoff and jitter honouring
``Retry-After``, a bounded time per request, every answered request in the request cache as it arrives, a malformed
reply after the retries counted per sample (``last_status``), the budget (careval.backends.budget). The key is read
from the environment variable the entry names, never from the config, and never written anywhere.
"""

from __future__ import annotations

from typing import Any

from .base import Backend, Capabilities
from .endpoint import read_key
from .http_client import EndpointError
from .openai_chat import OpenAICompatBackend
from .openai_completions import CAPABILITIES, CompletionsBackend
from .registry import register_backend

__all__ = ["CompletionsBackend", "EndpointError", "OpenAICompatBackend", "read_key", "spec_capabilities"]


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
