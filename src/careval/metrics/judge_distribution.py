"""The judge's own score distribution: its probabilities of "1".."5" after its feedback and "[RESULT]".

prometheus-eval's judges write "<feedback> [RESULT] <n>". After the judge has written its
feedback, one scoring pass asks it for the log-likelihood of each of the five score tokens at the
place where the score goes: context = the judge prompt as the backend formats it for generation
(chat template, system prompt) + the feedback + " [RESULT] ", continuations "1".."5". The five
pairs share their context, so the hf backend scores them in one forward pass (hf.score_tokens).

The probabilities are renormalised over the five scores. From them: the most likely score (read
when the verdict does not parse) and the probability-weighted mean score (G-Eval, arXiv
2303.16634). No sampling is involved: the distribution of one feedback is deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from careval.backends.base import Backend, TopStep

SCORES = (1, 2, 3, 4, 5)
# prometheus' output format: "Feedback: ... [RESULT] n"
RESULT_MARK = "[RESULT]"


def feedback_part(output: str | None) -> str:
    """What the judge wrote before its (last) "[RESULT]", without trailing whitespace; the whole output if it has none.

    A verdict that parses keeps its feedback; an unparseable one ("[RESULT] excellent", a verdict
    cut at max_new_tokens) is asked for the score at the place its own score went, or would go.
    """
    head = re.split(r"\[RESULT\]", output or "", flags=re.IGNORECASE)
    text = head[-2] if len(head) > 1 else head[0]
    return text.rstrip()


def scoring_context(formatted_prompt: str, output: str | None) -> str:
    """The text after which the judge's score token comes: formatted prompt + feedback + " [RESULT] "."""
    feedback = feedback_part(output)
    return f"{formatted_prompt}{feedback}{' ' if feedback else ''}{RESULT_MARK} "


def score_pairs(context: str) -> list[tuple[str, str]]:
    """The five (context, score) pairs of one verdict, in score order."""
    return [(context, str(score)) for score in SCORES]


def probabilities(logliks: Sequence[float]) -> list[float]:
    """The five scores' probabilities from their log-likelihoods, renormalised over the five (a softmax)."""
    if len(logliks) != len(SCORES):
        raise ValueError(f"need {len(SCORES)} log-likelihoods, got {len(logliks)}")
    if not all(math.isfinite(x) for x in logliks):
        raise ValueError(f"the judge's score log-likelihoods are not all finite: {list(logliks)}")
    top = max(logliks)
    weights = [math.exp(x - top) for x in logliks]
    total = sum(weights)
    return [w / total for w in weights]


def most_likely(probs: Sequence[float]) -> int:
    """The score with the highest probability (the lower score on an exact tie)."""
    return SCORES[max(range(len(SCORES)), key=lambda i: (probs[i], -i))]


def expected_score(probs: Sequence[float]) -> float:
    """The probability-weighted mean score, sum_s s * p(s) (G-Eval)."""
    return float(sum(score * p for score, p in zip(SCORES, probs)))


def score_distributions(
    backend: Backend, prompts: Sequence[str], outputs: Sequence[str | None]
) -> list[list[float]] | None:
    """The five probabilities per (judge prompt, judge output), or None when the judge gives no log-probabilities
    (its capabilities say so: an OpenAI-compatible server).

    One loglikelihood call for every verdict (5 pairs each), after the prompt as the judge was sent it
    (``format``: its system prompt and chat template).
    """
    if not backend.capabilities.prompt_logprobs:
        return None
    pairs = [
        pair
        for prompt, output in zip(prompts, outputs)
        for pair in score_pairs(scoring_context(backend.format(prompt), output))
    ]
    logliks = backend.loglikelihood(pairs)
    if len(logliks) != len(pairs):
        raise ValueError(f"judge returned {len(logliks)} log-likelihoods for {len(pairs)} score pairs")
    n = len(SCORES)
    return [probabilities(logliks[k : k + n]) for k in range(0, len(logliks), n)]


def top_distribution(steps: Sequence[TopStep]) -> list[float] | None:
    """The five probabilities read from a generated verdict's own top log-probabilities (a served model's chat API,
    which gives no prompt log-probabilities): at the first score token after its last "[RESULT]", the alternatives
    "1".."5" (a token's surrounding spaces aside), renormalised over the five; a score not among the returned
    alternatives has probability 0. None where the verdict has no such token or none of the five is returned."""
    text, starts = "", []
    for step in steps:
        starts.append(len(text))
        text += step.token
    mark = text.upper().rfind(RESULT_MARK)
    if mark < 0:
        return None
    after = mark + len(RESULT_MARK)
    for start, step in zip(starts, steps):
        if start + len(step.token) <= after or not step.token.strip():
            continue
        if step.token.strip() not in {str(s) for s in SCORES}:
            return None
        weights = [0.0] * len(SCORES)
        for token, logprob in step.top.items():
            key = token.strip()
            if key in {str(s) for s in SCORES} and math.isfinite(logprob):
                weights[int(key) - 1] += math.exp(logprob)
        total = sum(weights)
        return [w / total for w in weights] if total > 0 else None
    return None
