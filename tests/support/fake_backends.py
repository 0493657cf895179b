"""A scripted backend's base: the Backend interface with no log-probabilities (subclasses write `generate`)."""

from __future__ import annotations

from careval.backends import Backend, Capabilities


class GenerationOnly(Backend):
    """Generation only, as an OpenAI-compatible server: the judge reads no score distribution from it."""

    name = backend = "scripted"
    max_length = 4096
    capabilities = Capabilities(prompt_logprobs=False, top_logprobs=False, chat_template=False, max_gpus=0)
