"""Bootstrap intervals for across-model correlations: resample each benchmark's sample ids, recompute every model's score."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import polars as pl

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.metrics.registry import VALUED_STATUSES, metric_spec

# Resamples are processed in chunks so a paper-sized run (30 models x 3k samples x 1000 resamples)
# stays within a few hundred MB per metric.
CHUNK = 100
# How per-sample values combine is the registry's `average`: perplexities geometrically with their
# word/byte weights, which is exactly the corpus value lm-eval reports (exp(-sum ll / sum words)), so a
# resample recomputes the same statistic as the summary.


def resample_indices(sizes: list[int], n_resamples: int, seed: int) -> list[np.ndarray]:
    """One (n_resamples, n) matrix of sample positions per benchmark, drawn in order from one seeded generator.

    This is the scheme of scipy.stats.bootstrap for independent samples (paired=False): each sample
    (here: each benchmark's ids, shared by every model and metric of that benchmark) is resampled
    with replacement on its own, in the order given.
    """
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n, (n_resamples, n)) for n in sizes]


def _weighted_means(
    values: np.ndarray, weights: np.ndarray, index: np.ndarray, geometric: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per-model weighted mean of the ok (finite) values at `index` (B, n) -> means (B, m) and ok counts (B, m)."""
    means, counts = [], []
    for start in range(0, index.shape[0], CHUNK):
        picked = values[:, index[start : start + CHUNK]]  # (m, b, n)
        ok = np.isfinite(picked)
        w = np.where(ok, weights[:, index[start : start + CHUNK]], 0.0)
        v = np.where(ok, np.log(np.where(ok, picked, 1.0)) if geometric else picked, 0.0)
        total = w.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (v * w).sum(-1) / total
        mean = np.where(total > 0, np.exp(mean) if geometric else mean, np.nan)
        means.append(mean.T)
        counts.append(ok.sum(-1).T)
    return np.concatenate(means), np.concatenate(counts)


@dataclass(frozen=True)
class Resampled:
    """Model scores per (benchmark, metric): row 0 on all samples, rows 1..B on the bootstrap resamples."""

    models: list[str]
    scores: dict[tuple[str, str], np.ndarray]
    n_resamples: int

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        return self.scores.get(key)


def resample_model_scores(
    sample_scores: pl.DataFrame, n_resamples: int, seed: int, mcqa_average: list[str] | None = None
) -> Resampled:
    """Every model's score per benchmark x metric on B resamples of each benchmark's sample ids.

    `sample_scores` is the per-sample table (model, benchmark, task, metric, id, value, status, weight);
    only rows with a valued status (ok, a judge grade from_distribution) count, as in the summary. Benchmarks are
    resampled in sorted order; the MCQA weighted average is recomputed from the resampled per-benchmark accuracies
    of its members (`mcqa_average`, as in the summary; None: every mcqa benchmark).
    """
    models = sorted(sample_scores["model"].unique().to_list())
    benchmarks = sorted(sample_scores["benchmark"].unique().to_list())
    ids = {b: sorted(sample_scores.filter(pl.col("benchmark") == b)["id"].unique().to_list()) for b in benchmarks}
    indices = resample_indices([len(ids[b]) for b in benchmarks], n_resamples, seed)
    scores: dict[tuple[str, str], np.ndarray] = {}
    counts: dict[tuple[str, str], np.ndarray] = {}
    tasks = dict(sample_scores.select("benchmark", "task").unique().iter_rows())
    for benchmark, index in zip(benchmarks, indices):
        # row 0 is the identity resample: the point estimate on all samples
        index = np.vstack([np.arange(len(ids[benchmark]))[None, :], index])
        position = {sample_id: j for j, sample_id in enumerate(ids[benchmark])}
        rows = sample_scores.filter(pl.col("benchmark") == benchmark)
        for (metric,), group in rows.group_by("metric", maintain_order=True):
            values = np.full((len(models), len(position)), np.nan)
            weights = np.zeros_like(values)
            ok = group.filter(pl.col("status").is_in(VALUED_STATUSES) & pl.col("value").is_not_null())
            rows_at = ok["model"].replace_strict({m: i for i, m in enumerate(models)}, return_dtype=pl.Int64).to_numpy()
            cols_at = ok["id"].replace_strict(position, return_dtype=pl.Int64).to_numpy()
            values[rows_at, cols_at] = ok["value"].to_numpy()
            weights[rows_at, cols_at] = ok["weight"].to_numpy()
            geometric = metric_spec(metric).average == "geometric"
            scores[(benchmark, metric)], counts[(benchmark, metric)] = _weighted_means(
                values, weights, index, geometric
            )
    for metric in ("acc", "acc_norm"):
        parts = [
            key
            for key in scores
            if key[1] == metric and tasks.get(key[0]) == "mcqa" and (mcqa_average is None or key[0] in mcqa_average)
        ]
        if parts:
            total = sum(np.where(np.isfinite(scores[k]), scores[k] * counts[k], 0.0) for k in parts)
            n = sum(np.where(np.isfinite(scores[k]), counts[k], 0) for k in parts)
            with np.errstate(invalid="ignore", divide="ignore"):
                scores[(MCQA_AVERAGE, metric)] = np.where(n > 0, total / n, np.nan)
    return Resampled(models=models, scores=scores, n_resamples=n_resamples)


def rowwise_correlation(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    """Pearson, Spearman or Kendall's tau-b per row of two (B, m) arrays over the models finite in both; NaN when n < 3
    or constant."""
    x, y = np.array(x, float), np.array(y, float)
    valid = np.isfinite(x) & np.isfinite(y)
    x, y = np.where(valid, x, np.nan), np.where(valid, y, np.nan)
    if method == "kendall":
        return _rowwise_kendall(x, y, valid)
    if method == "spearman":
        from scipy import stats  # here: the plan imports this module's callers for their job specs (~1 s)

        x = stats.rankdata(x, axis=1, nan_policy="omit")
        y = stats.rankdata(y, axis=1, nan_policy="omit")
    elif method != "pearson":
        raise ValueError(f"unknown correlation method '{method}' (pearson, spearman, kendall)")
    n = valid.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: their result is NaN, set below
        dx = x - np.nanmean(x, axis=1, keepdims=True)
        dy = y - np.nanmean(y, axis=1, keepdims=True)
        sxx, syy = np.nansum(dx * dx, 1), np.nansum(dy * dy, 1)
        r = np.nansum(dx * dy, 1) / np.sqrt(sxx * syy)
        constant = (np.nanmax(x, 1) == np.nanmin(x, 1)) | (np.nanmax(y, 1) == np.nanmin(y, 1))
    r = np.clip(r, -1.0, 1.0)
    return np.where((n >= 3) & ~constant, r, np.nan)


def _rowwise_kendall(x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Kendall's tau-b per row over the pairs of models both finite in it (a NaN's signs count as 0)."""
    i, j = np.triu_indices(x.shape[1], 1)
    with np.errstate(invalid="ignore"):
        sx = np.nan_to_num(np.sign(x[:, i] - x[:, j]))
        sy = np.nan_to_num(np.sign(y[:, i] - y[:, j]))
        tau = (sx * sy).sum(1) / np.sqrt(np.abs(sx).sum(1) * np.abs(sy).sum(1))
    return np.where(valid.sum(1) >= 3, tau, np.nan)


def percentile_interval(distribution: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval (numpy's linear quantiles, as scipy.stats.bootstrap's method='percentile').

    Resamples where the correlation is undefined (a constant or too-small resample) are dropped; when
    more than half are undefined the interval is NaN rather than a misleadingly narrow one.
    """
    finite = distribution[np.isfinite(distribution)]
    if finite.size == 0 or finite.size < distribution.size / 2:
        return float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(finite, [alpha, 1 - alpha])
    return float(low), float(high)


def correlation_interval(
    resampled: Resampled,
    x_key: tuple[str, str],
    y_key: tuple[str, str],
    method: str,
    confidence: float,
    fixed: dict[tuple[str, str], np.ndarray] | None = None,
) -> tuple[float, float]:
    """Bootstrap interval of corr(x, y) across models; `fixed` supplies per-model values that are not resampled (Elo)."""
    fixed = fixed or {}

    def series(key):
        if key in fixed:
            return np.tile(fixed[key], (resampled.n_resamples + 1, 1))
        return resampled.get(key)

    x, y = series(x_key), series(y_key)
    if x is None or y is None or resampled.n_resamples == 0:
        return float("nan"), float("nan")
    return percentile_interval(rowwise_correlation(x[1:], y[1:], method), confidence)
