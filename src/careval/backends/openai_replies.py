"""Reading the completions API's replies (careval.backends.openai_completions): the prompt log-probabilities of an
echo, a generation's text and steps, Relaxed Perplexity's samples; a reply not of that shape is Malformed (retried,
then a counted status: careval.backends.http_client)."""

from __future__ import annotations

import math
from typing import Any

from careval.redaction import redact

from .base import CapabilityError, Sampling, TopStep
from .http_client import Malformed
from .tokenization import truncate_at_stop


def echo_reply(length: int):
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


def completion_reply(sampling: Sampling, steps: bool):
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


def samples_reply(where: str, n: int):
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
