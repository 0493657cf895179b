"""Relaxed Perplexity (paper section 4, appendix D): how likely a model is to say the target anywhere early in its answer.

Definition (paper, App. D), for a question q and a target t of T tokens::

    P(A_n | B_n) ~= sum_{p in P_n} P(t | q + p)                    (skewed, the paper's final form)
    P(A_n | B_n) ~= sum_{p in P_n} P(t | q + p) * P(p | q)         (unskewed, ``skewed=False``)
    relaxed cross-entropy H = - sum_{n in N} log P(A_n | B_n)
    Relaxed Perplexity      = exp(H / (n_max + T))

where P_n is the set of distinct n-token prefixes ``c[:n]`` of the kept continuations.
Choices where the paper is terse (all documented here, all exercised by the tests):

* Continuations: ``s`` samples of ``max_tokens`` tokens from the model given q (top-p,
  temperature 1), of which the ``l`` with the highest joint log-probability are kept (the
  brief's reading of "the l more likely sequences sampled from the model"; duplicates are
  dropped first). End-of-sequence tokens are held back while sampling (vLLM's
  ``min_tokens``) so every continuation has ``max_tokens`` tokens: the paper's
  approximation P(B_n) ~= 1 holds by construction. Log-probabilities (for ranking and the
  unskewed weights) are the model's unmodified ones, not the top-p-truncated ones.
* Distinct prefixes: the paper's sum runs over mutually exclusive n-token sequences, so a
  prefix shared by several continuations counts once (at n = 0 every continuation has the
  empty prefix: the n = 0 term is P(t | q), not l * P(t | q)). With *all* continuations of
  length n kept, the unskewed term is exactly P(t starts right after n generated tokens).
* Stride points N = {0, stride, 2*stride, ...} <= max_tokens ("sum_{i=0, i+stride}^{n}");
  explicit continuations shorter than a stride point drop out of it, and a point no kept
  continuation reaches is left out. ``n_max`` is the paper's upper summation limit n, i.e.
  ``max_tokens`` (the completion length), also when stride does not divide it (the paper's
  settings, 128/256 tokens with stride 8/16, always divide).
* Lengths are in tokens of the evaluated model. The target is tokenized as a continuation
  of running text (``" " + target``, no special tokens); the question ids are the
  generation prompt's (see careval.jobs.relaxed_perplexity).
* Targets (as the paper: OLAPH/MedLFQA Must_have statements, CareQA-Open answers, MedText):
  a sample's meta ``must_have`` list when present, else ``[reference]`` (the raw full
  reference: CareQA-Open and MedText have no statements). The per-sample value is the mean
  over its targets of the perplexity and of the cross-entropy (each averaged separately).
  OLAPH's ``nice_to_have`` statements, where the sample has them, are a second target set
  scored in the same pass (appendix D, table 6 reports both): metrics ``*_nice_to_have``.
  The benchmark job, with the per-target values kept in a file: careval.jobs.relaxed_perplexity.

Written once, over the backend interface (careval.backends.base.Backend): ``sample_continuations`` draws the
continuations, ``target_logprobs`` gives log P(t | q + p) and log P(p | q) for every distinct prefix; each
backend computes those its own way (hf on the sampler's key/value cache, vLLM from prompt log-probabilities).
tests/metrics/test_relaxed_perplexity.py checks the result against a brute-force enumeration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from careval.backends.base import Backend, Prefix, step_prefixes
from careval.schema import with_schema_defaults

# The estimator's options (paper section 4); their defaults (the paper's) live in the config schema only,
# metrics.relaxed_perplexity, and resolve_options fills them from there.
ESTIMATOR_OPTIONS = ("l", "s", "stride", "top_p", "max_tokens", "skewed", "seed")
METRICS = ("relaxed_perplexity", "relaxed_cross_entropy")
# The second target set (OLAPH's Nice_to_have statements): its metrics carry this suffix.
NICE_TO_HAVE = "nice_to_have"


@dataclass(frozen=True)
class RelaxedPerplexity:
    """One (question, target) value and the per-step terms behind it."""

    cross_entropy: float
    perplexity: float
    steps: tuple[int, ...]  # the stride points n included
    log_terms: tuple[float, ...]  # log P(A_n | B_n) estimate at each step
    n_max: int
    target_tokens: int
    skewed: bool
    continuations: tuple[Prefix, ...] = field(repr=False, default=())


# ---------------------------------------------------------------------------------------
# the estimator (backend-agnostic)
# ---------------------------------------------------------------------------------------
def stride_points(max_tokens: int, stride: int) -> list[int]:
    if stride < 1:
        raise ValueError(f"relaxed perplexity: stride must be >= 1, got {stride}")
    if max_tokens < 0:
        raise ValueError(f"relaxed perplexity: max_tokens must be >= 0, got {max_tokens}")
    return list(range(0, max_tokens + 1, stride))


def select_continuations(continuations: Sequence[Sequence[int]], logprobs: Sequence[float], l: int) -> list[int]:  # noqa: E741  (the paper's l)
    """Indices of the ``l`` most likely distinct continuations (ties: the earlier sample)."""
    first: dict[Prefix, int] = {}
    for i, c in enumerate(continuations):
        first.setdefault(tuple(c), i)
    ranked = sorted(first.values(), key=lambda i: (-logprobs[i], i))
    return ranked[:l]


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def combine(
    prefixes: dict[int, list[Prefix]],
    target_ll: dict[Prefix, float],
    prefix_ll: dict[Prefix, float] | None,
    target_tokens: int,
    *,
    n_max: int,
    skewed: bool,
    continuations: Sequence[Prefix] = (),
) -> RelaxedPerplexity:
    """The metric from log P(t | q + p) (and, unskewed, log P(p | q)) of every distinct prefix p;
    ``n_max`` (max_tokens) is the n of the paper's normaliser n + len(target)."""
    steps, terms = [], []
    for n, group in prefixes.items():
        if skewed:
            values = [target_ll[p] for p in group]
        else:
            assert prefix_ll is not None  # unskewed: the prefixes were scored
            values = [target_ll[p] + prefix_ll[p] for p in group]
        steps.append(n)
        terms.append(_logsumexp(values))
    cross_entropy = -sum(terms)
    perplexity = math.exp(cross_entropy / (n_max + target_tokens)) if target_tokens else math.nan
    return RelaxedPerplexity(
        cross_entropy,
        perplexity,
        tuple(steps),
        tuple(terms),
        n_max,
        target_tokens,
        skewed,
        tuple(tuple(c) for c in continuations),
    )


def resolve_options(options: dict | None, allowed: Sequence[str] = ESTIMATOR_OPTIONS) -> dict[str, Any]:
    """The `allowed` options with the schema's defaults (metrics.relaxed_perplexity) for those not set."""
    unknown = sorted(set(options or {}) - set(allowed))
    if unknown:
        raise TypeError(f"relaxed perplexity: unknown option(s) {', '.join(unknown)}; known are {', '.join(allowed)}")
    given = {k: v for k, v in (options or {}).items() if v is not None}
    filled = with_schema_defaults(given, "metrics.relaxed_perplexity")
    merged: dict[str, Any] = {key: filled.get(key) for key in allowed}
    if merged["l"] < 1 or merged["s"] < merged["l"]:
        raise ValueError(f"relaxed perplexity: need 1 <= l <= s, got l={merged['l']}, s={merged['s']}")
    if not 0 < merged["top_p"] <= 1:
        raise ValueError(f"relaxed perplexity: top_p must be in (0, 1], got {merged['top_p']}")
    stride_points(merged["max_tokens"], merged["stride"])  # validates both
    return merged


# ---------------------------------------------------------------------------------------
# the algorithm, over any backend
# ---------------------------------------------------------------------------------------
def relaxed_perplexities(
    backend: Backend,
    question_ids: Sequence[int],
    targets: Sequence[Sequence[int]],
    *,
    continuations: Sequence[Sequence[int]] | None = None,
    **options: Any,
) -> list[RelaxedPerplexity]:
    """Relaxed Perplexity of several targets of one question (the continuations are sampled once for all).

    ``question_ids``: the prompt's token ids (as the backend generates from them); ``targets``: token ids of
    each target (each non-empty). ``continuations``: explicit continuations (token ids) used as the kept set
    as they are -- no sampling, no selection; otherwise ``s`` are sampled (seeded) and the ``l`` most likely
    kept. ``options``: l, s, stride, top_p, max_tokens, skewed, seed (unset: the schema's defaults, the paper's).
    """
    opts = resolve_options(options)
    if not question_ids:
        raise ValueError("relaxed perplexity: the question encodes to zero tokens")
    if any(len(t) == 0 for t in targets):
        raise ValueError("relaxed perplexity: a target encodes to zero tokens")
    steps = stride_points(opts["max_tokens"], opts["stride"])
    if continuations is None and opts["max_tokens"] == 0:
        continuations = [()]  # only n = 0: nothing to sample
    if continuations is None:
        sampled = backend.sample_continuations(
            question_ids, n=opts["s"], max_tokens=opts["max_tokens"], top_p=opts["top_p"], seed=opts["seed"]
        )
        drawn = [c.token_ids for c in sampled]
        kept = [drawn[i] for i in select_continuations(drawn, [c.logprob for c in sampled], opts["l"])]
    else:
        kept = [tuple(int(x) for x in c) for c in continuations] or [()]
    prefixes = step_prefixes(kept, steps)
    scored = backend.target_logprobs(question_ids, kept, list(prefixes), targets)
    return [
        combine(
            prefixes,
            {p: value.target for p, value in by_prefix.items()},
            {p: value.prefix for p, value in by_prefix.items()},
            len(target),
            n_max=opts["max_tokens"],
            skewed=opts["skewed"],
            continuations=kept,
        )
        for target, by_prefix in zip(targets, scored)
    ]


def relaxed_perplexity(
    backend: Backend,
    question_ids: Sequence[int],
    target_ids: Sequence[int],
    *,
    continuations: Sequence[Sequence[int]] | None = None,
    **options: Any,
) -> RelaxedPerplexity:
    """Relaxed Perplexity of one target given one question (see the module docstring and :func:`relaxed_perplexities`).

    Returns cross-entropy, perplexity and the per-step terms log P(A_n | B_n).
    """
    return relaxed_perplexities(backend, question_ids, [target_ids], continuations=continuations, **options)[0]
