"""What the paired comparisons say about each ranking: the outcome of every pair (win / tie / loss after adjustment),
the groups of statistically tied models (a compact letter display) and how many adjacent ranks differ significantly."""

from __future__ import annotations

import itertools
import math
import string

import numpy as np
import polars as pl

from careval.metrics.registry import higher_is_better
from careval.schemas import ADJACENT_SCHEMA, GROUP_SCHEMA

ADJUSTED = {"holm": "p_holm", "bh": "p_bh"}


def compact_letter_display(models: list[str], different: set[frozenset[str]]) -> dict[str, str]:
    """Letters per model such that two models share a letter exactly when no significant difference separates
    them by the letters' construction (Piepho's insert-absorb): every significantly different pair shares none, every
    other pair shares at least one. Letters run in the order of `models` (best first)."""
    columns: list[set[str]] = [set(models)]
    for pair in different:
        i, j = tuple(pair)
        split = []
        for column in columns:
            if i in column and j in column:
                split += [column - {i}, column - {j}]
            else:
                split.append(column)
        # absorb: a column inside another says nothing more
        columns = [
            c for k, c in enumerate(split) if c and not any(c < o or (c == o and m < k) for m, o in enumerate(split))
        ]
    rank = {m: k for k, m in enumerate(models)}
    columns.sort(key=lambda c: min(rank[m] for m in c))
    alphabet = string.ascii_lowercase + string.ascii_uppercase
    letters = dict.fromkeys(models, "")
    for k, column in enumerate(columns):
        for m in column:
            letters[m] += alphabet[k] if k < len(alphabet) else f"[{k}]"
    return letters


def outcome(comparisons: pl.DataFrame, alpha: float, adjust: str) -> pl.DataFrame:
    """Each comparison's outcome for model_a: 1 a significantly better (after `adjust`), -1 significantly worse, 0 tie
    (direction from the metric registry). A comparison without a difference or a p (NaN: a model scored nothing
    finite there) is a tie, not a number cast from NaN."""
    column = ADJUSTED[adjust]
    better = [1 if higher_is_better(m) else -1 for m in comparisons["metric"]]
    diff = comparisons["diff"].cast(pl.Float64).fill_nan(None).fill_null(0.0).to_numpy()
    p = comparisons[column].cast(pl.Float64).fill_nan(None).fill_null(1.0).to_numpy()
    sign = np.sign(diff).astype(np.int64) * np.array(better, np.int64)
    return comparisons.with_columns(outcome=pl.Series(sign * (p < alpha), dtype=pl.Int64))


def ranking_groups(
    comparisons: pl.DataFrame,
    summary: pl.DataFrame,
    model_set: str,
    members: tuple[str, ...],
    alpha: float,
    adjust: str,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per benchmark x metric compared within `model_set`: the models ranked by their summary value with their group
    letters (GROUP_SCHEMA), and the count of adjacent pairs of that ranking that differ significantly (ADJACENT_SCHEMA)."""
    column = ADJUSTED[adjust]
    rows, adjacent = [], []
    block = comparisons.filter(pl.col("model_set") == model_set)
    values = summary.filter(pl.col("model").is_in(list(members)))
    for (benchmark, metric), pairs in block.group_by("benchmark", "metric", maintain_order=True):
        scored = values.filter((pl.col("benchmark") == benchmark) & (pl.col("metric") == metric))
        value = {m: v for m, v in scored.select("model", "value").iter_rows() if v is not None and math.isfinite(v)}
        order = sorted(value, key=lambda m: -value[m] if higher_is_better(metric) else value[m])
        if not order:
            continue
        different = {
            frozenset((a, b))
            for a, b, p in pairs.select("model_a", "model_b", column).iter_rows()
            if p is not None and p < alpha and a in value and b in value
        }
        letters = compact_letter_display(order, different)
        rows += [(model_set, benchmark, metric, k + 1, m, value[m], letters[m]) for k, m in enumerate(order)]
        hits = sum(frozenset((a, b)) in different for a, b in itertools.pairwise(order))
        adjacent.append((model_set, benchmark, metric, len(order), len(order) - 1, hits))
    return (
        pl.DataFrame(rows, schema=GROUP_SCHEMA, orient="row"),
        pl.DataFrame(adjacent, schema=ADJACENT_SCHEMA, orient="row"),
    )
