"""Which backend and decoding a CareQA LLM step (translator, rephraser) uses, from the `careqa` config."""

from __future__ import annotations

from dataclasses import replace

from careval.backends.base import Sampling


def llm_sampling(step: dict) -> Sampling:
    """The decoding of a CareQA step (its schema defaults: greedy, so a rebuild gives the same dataset)."""
    return Sampling(max_new_tokens=step["max_new_tokens"], temperature=step["temperature"], seed=step["seed"])


def verdict_sampling(sampling: Sampling) -> Sampling:
    # A selection or a YES/NO verdict is a word or two; a chat model may wrap it in a short phrase.
    return replace(sampling, max_new_tokens=min(sampling.max_new_tokens, 16))
