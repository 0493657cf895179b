"""Correlations across models: MCQA average accuracy vs open-ended metrics, and metric x metric per benchmark."""
from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
from scipy import stats

from careval.analysis.aggregate import MCQA_AVERAGE

CORRELATION_SCHEMA = {"analysis": pl.String, "benchmark": pl.String, "x": pl.String, "y": pl.String,
                      "method": pl.String, "r": pl.Float64, "p_value": pl.Float64, "n_models": pl.Int64}

# Lower is better for these; correlations keep the raw direction, the figures say so in their captions.
LOWER_IS_BETTER = ("perplexity", "bits_per_byte")


def correlate(x: list[float], y: list[float], method: str) -> tuple[float, float]:
    """Pearson or Spearman (scipy) over the models that have both values; NaN when undefined (n < 3 or constant)."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
    if len(pairs) < 3:
        return float("nan"), float("nan")
    xs, ys = np.array(pairs).T
    if np.ptp(xs) == 0 or np.ptp(ys) == 0:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on tiny n; the n is reported beside every value
        result = stats.pearsonr(xs, ys) if method == "pearson" else stats.spearmanr(xs, ys)
    return float(result.statistic), float(result.pvalue)


def _wide(summary: pl.DataFrame, benchmark: str) -> pl.DataFrame:
    rows = summary.filter(pl.col("benchmark") == benchmark).select("model", "metric", "value")
    return rows.pivot(on="metric", index="model", values="value").sort("model")


def mcqa_vs_open(summary: pl.DataFrame, methods: list[str], mcqa_metric: str = "acc") -> pl.DataFrame:
    mcqa = summary.filter((pl.col("benchmark") == MCQA_AVERAGE) & (pl.col("metric") == mcqa_metric))
    accuracy = dict(zip(mcqa["model"], mcqa["value"]))
    rows = []
    open_rows = summary.filter(pl.col("task") == "open")
    for benchmark in sorted(open_rows["benchmark"].unique()):
        wide = _wide(open_rows, benchmark)
        x = [accuracy.get(model) for model in wide["model"]]
        for metric in [c for c in wide.columns if c != "model"]:
            for method in methods:
                r, p = correlate(x, wide[metric].to_list(), method)
                rows.append({"analysis": "mcqa_vs_open", "benchmark": benchmark, "x": f"mcqa_{mcqa_metric}",
                             "y": metric, "method": method, "r": r, "p_value": p, "n_models": len(x)})
    return pl.DataFrame(rows, schema=CORRELATION_SCHEMA)


def metric_matrix(summary: pl.DataFrame, benchmark: str, method: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Metric names, the correlation matrix and its p-values over the models scored on `benchmark`."""
    wide = _wide(summary, benchmark)
    names = [c for c in wide.columns if c != "model"]
    r = np.full((len(names), len(names)), np.nan)
    p = np.full_like(r, np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            r[i, j], p[i, j] = correlate(wide[a].to_list(), wide[b].to_list(), method)
    return names, r, p


def metric_matrices(summary: pl.DataFrame, methods: list[str]) -> pl.DataFrame:
    rows = []
    for benchmark in sorted(summary.filter(pl.col("task") == "open")["benchmark"].unique()):
        n_models = summary.filter(pl.col("benchmark") == benchmark)["model"].n_unique()
        for method in methods:
            names, r, p = metric_matrix(summary, benchmark, method)
            for i, a in enumerate(names):
                for j, b in enumerate(names):
                    rows.append({"analysis": "metric_x_metric", "benchmark": benchmark, "x": a, "y": b,
                                 "method": method, "r": float(r[i, j]), "p_value": float(p[i, j]), "n_models": n_models})
    return pl.DataFrame(rows, schema=CORRELATION_SCHEMA)
