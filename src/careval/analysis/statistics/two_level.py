"""The inner level of the two-level bootstrap of the paired comparisons (`analysis.comparisons.two_level`): each
prompt's self-consistency answers resampled inside each outer resample of the benchmark's prompts."""

from __future__ import annotations

import numpy as np
import polars as pl

from careval.analysis.statistics.comparisons import CHUNK, Block, Draws, block_seed, resample_counts
from careval.metrics.registry import VALUED_STATUSES, metric_spec


class GenerationNoise:
    """The inner level of the two-level bootstrap: each prompt's sampled answers (self-consistency repeats), resampled.

    A model's value on prompt i in resample b is its scored value plus the deviation of the mean of r answers drawn
    with replacement from its r sampled answers from their mean; the pair's difference on resample b gains the
    (outer-resampled) mean of the two models' deviations. So the interval widens by the models' own sampling spread,
    and a difference smaller than it is not called significant. Plain (arithmetic) metrics only.
    """

    def __init__(self, repeats: pl.DataFrame, seed: int):
        """repeats: model, benchmark, metric, id, repeat, value, status (the repeat score files, stacked)."""
        self.repeats = repeats.filter(pl.col("status").is_in(VALUED_STATUSES) & pl.col("value").is_finite())
        self.seed = seed

    def __call__(self, benchmark: str, metric: str, block: Block, pairs: np.ndarray):
        if metric_spec(metric).average != "mean":
            return None
        rows = self.repeats.filter((pl.col("benchmark") == benchmark) & (pl.col("metric") == metric))
        if rows.is_empty():
            return None
        by_model = dict(rows.partition_by("model", as_dict=True, include_key=False).items())
        by_model = {key[0]: frame for key, frame in by_model.items()}
        answers = {i: self.answer_matrix(by_model[m], block.ids) for i, m in enumerate(block.models) if m in by_model}
        seed = self.seed

        def noise(draws: Draws, common: np.ndarray) -> np.ndarray | None:
            index = draws.index
            rng = block_seed(seed + 1, benchmark, metric)  # its own stream: the outer indices stay scipy's
            deviations = {i: _inner_deviations(s, index.shape[0], rng) for i, s in answers.items()}
            n = index.shape[1]
            out = np.zeros((len(pairs), index.shape[0]))
            for start in range(0, index.shape[0], CHUNK):
                counts = resample_counts(index[start : start + CHUNK], n)  # (b, n)
                for row, (a, b) in enumerate(pairs):
                    e = np.zeros((counts.shape[0], n))
                    if a in deviations:
                        e += deviations[a][start : start + CHUNK]
                    if b in deviations:
                        e -= deviations[b][start : start + CHUNK]
                    weight = counts * common[row]
                    with np.errstate(invalid="ignore", divide="ignore"):
                        out[row, start : start + CHUNK] = (weight * e).sum(-1) / weight.sum(-1)
            return out

        return noise

    @staticmethod
    def answer_matrix(frame: pl.DataFrame, ids: list[str]) -> np.ndarray:
        """(n ids, r repeats) of one model's scored sampled answers, NaN where an answer failed or is absent."""
        repeats = sorted(frame["repeat"].unique().to_list())
        at_id, at_r = {s: j for j, s in enumerate(ids)}, {r: k for k, r in enumerate(repeats)}
        frame = frame.filter(pl.col("id").is_in(ids))
        out = np.full((len(ids), len(repeats)), np.nan)
        out[
            frame["id"].replace_strict(at_id, return_dtype=pl.Int64).to_numpy(),
            frame["repeat"].replace_strict(at_r, return_dtype=pl.Int64).to_numpy(),
        ] = frame["value"].to_numpy()
        return out


def _inner_deviations(answers: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, n): per resample and prompt, the mean of the prompt's answers drawn with replacement minus their mean
    (0 for a prompt without two answers)."""
    n, r = answers.shape
    valid = np.isfinite(answers)
    count = valid.sum(1)
    # draw among each prompt's valid answers: sort them first, then an index below its count
    order = np.argsort(~valid, axis=1, kind="stable")
    packed = np.take_along_axis(np.where(valid, answers, 0.0), order, axis=1)
    mean = np.where(count > 0, packed.sum(1) / np.maximum(count, 1), 0.0)
    out = np.empty((resamples, n))
    for start in range(0, resamples, CHUNK):
        b = min(CHUNK, resamples - start)
        draws = np.floor(rng.random((b, n, r)) * np.maximum(count, 1)[None, :, None]).astype(int)
        picked = packed[np.arange(n)[None, :, None], draws]
        out[start : start + b] = np.where(count >= 2, picked.mean(-1) - mean, 0.0)
    return out
