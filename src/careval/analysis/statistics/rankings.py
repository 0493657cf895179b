"""Model rankings per metric (paper figure 18): 1 is the best model under that metric (direction: the metric registry)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats

from careval.metrics.registry import higher_is_better
from careval.schemas import RANKING_SCHEMA


def rank_models(summary: pl.DataFrame, benchmark: str) -> pl.DataFrame:
    """Rank every model on every metric of `benchmark`; ties share the best rank, a missing value gets no rank."""
    rows = []
    table = summary.filter(pl.col("benchmark") == benchmark)
    for (metric,), group in table.sort("model").group_by("metric", maintain_order=True):
        models, values = group["model"].to_list(), group["value"].to_list()
        finite = [v is not None and math.isfinite(v) for v in values]
        scored = np.array([v for v, ok in zip(values, finite) if ok], float)
        ranks = iter(stats.rankdata(-scored if higher_is_better(metric) else scored, method="min").astype(int))
        for model, value, ok in zip(models, values, finite):
            rows.append(
                {
                    "benchmark": benchmark,
                    "metric": metric,
                    "model": model,
                    "value": value,
                    "rank": int(next(ranks)) if ok else None,
                }
            )
    return pl.DataFrame(rows, schema=RANKING_SCHEMA).sort("metric", "model")
