"""Word/byte perplexity and bits per byte from rolling log-likelihoods, as lm-eval defines them."""

from __future__ import annotations

import math
import re

# lm-eval (lm_eval/api/task.py, ConfigurableTask.process_results for loglikelihood_rolling, and the
# authors' lm_eval/tasks/{careqa,olaph,mts_dialog}/utils_perplexity.py) emits, per document,
# (loglikelihood, _words) and (loglikelihood, _bytes) with
#     _words = len(re.split(r"\s+", target))
#     _bytes = len(target.encode("utf-8"))
# and aggregates them in lm_eval/api/metrics.py:
#     weighted_mean(items) = sum(ll) / sum(count)
#     word_perplexity = byte_perplexity = exp(-weighted_mean(items))
#     bits_per_byte = -weighted_mean(items) / log(2)
# The log-likelihood is the natural-log sum over the whole target.

_WHITESPACE = re.compile(r"\s+")


def count_words(text: str) -> int:
    """lm-eval's word count: leading/trailing whitespace adds empty "words", "" counts as 1."""
    return len(_WHITESPACE.split(text))


def count_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _exp(x: float) -> float:
    # math.exp raises past ~709; a hopeless model should read as inf, not kill the job.
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _ratio(ll_sum: float, count: int) -> float:
    # -ll/count; undefined (NaN) when there is nothing to normalise by, i.e. an empty target's bytes.
    return -ll_sum / count if count > 0 else math.nan


def _metrics(ll_sum: float, words: int, n_bytes: int) -> dict[str, float]:
    per_word = _ratio(ll_sum, words)
    per_byte = _ratio(ll_sum, n_bytes)
    return {
        "word_perplexity": _exp(per_word) if not math.isnan(per_word) else math.nan,
        "byte_perplexity": _exp(per_byte) if not math.isnan(per_byte) else math.nan,
        "bits_per_byte": per_byte / math.log(2),
    }


def _check(logliks: list[float], texts: list[str]) -> None:
    if len(logliks) != len(texts):
        raise ValueError(f"{len(logliks)} log-likelihoods but {len(texts)} texts")


def per_sample_perplexities(logliks: list[float], texts: list[str]) -> dict[str, list[float]]:
    """Each document's own word/byte perplexity and bits per byte (NaN where bytes == 0)."""
    _check(logliks, texts)
    out: dict[str, list[float]] = {"word_perplexity": [], "byte_perplexity": [], "bits_per_byte": []}
    for ll, text in zip(logliks, texts):
        for k, v in _metrics(float(ll), count_words(text), count_bytes(text)).items():
            out[k].append(v)
    return out


def corpus_perplexities(logliks: list[float], texts: list[str]) -> dict[str, float]:
    """lm-eval's corpus values: token-count-weighted, i.e. sums of ll over sums of words/bytes.

    This is not the mean of the per-sample values. NaN for an empty corpus or zero total bytes.
    """
    _check(logliks, texts)
    return _metrics(
        float(sum(logliks)),
        sum(count_words(t) for t in texts),
        sum(count_bytes(t) for t in texts),
    )
