"""A jury of judges: each judge's grades renamed judge_<rubric>@<judge>, and the jury's grade judge_<rubric> their aggregate.

Each judge grades every answer (and every repeat) in jobs of its own, exactly as a single judge does
(careval.metrics.judge). This module only combines their score rows: per judge, every row is kept
under ``<metric>@<judge>``; the jury's row under the plain name is the aggregate of the judges' values
for the same answer (same key: id, and repeat for a repeat). The jury's value is given only where every
judge gave one: an answer one judge could not grade is NaN for the jury too, with that judge's status,
so a jury grade is never silently a smaller jury's. Its status is ``from_distribution`` when any judge's
grade was read from its score distribution, else ``ok``. The five probabilities p1..p5 of the jury row
are the mean of the judges' (a mixture of their distributions).

``aggregate``: ``mean`` (default), ``median``, or ``majority`` (the most frequent grade; a tie, and the
continuous ``_expected`` scores, take the median).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from careval.metrics.registry import JUDGE_EXPECTED_SUFFIX, JUDGE_SEPARATOR, VALUED_STATUSES
from careval.schemas import JUDGE_PROBABILITY_COLUMNS

AGGREGATES = ("mean", "median", "majority")
# the columns that identify one graded answer in a score file (id) or a repeats' file (id, repeat)
KEY_COLUMNS = ("id", "repeat")


def judge_metric(metric: str, judge: str) -> str:
    """The name of one judge's metric in a jury's tables: judge_<rubric>@<judge>."""
    return f"{metric}{JUDGE_SEPARATOR}{judge}"


def split_judge(metric: str) -> tuple[str, str | None]:
    """(the jury's metric name, the judge) of judge_<rubric>[_expected]@<judge>; (metric, None) for any other name."""
    base, sep, judge = metric.partition(JUDGE_SEPARATOR)
    return (base, judge) if sep else (metric, None)


def aggregate_values(values: np.ndarray, how: str, continuous: bool = False) -> np.ndarray:
    """The jury's value per row of `values` (answers x judges, every entry finite)."""
    if how not in AGGREGATES:
        raise ValueError(f"metrics.judge.aggregate: '{how}' is not one of {', '.join(AGGREGATES)}")
    if values.shape[1] == 1:
        return values[:, 0].copy()  # one judge: its own value, bit for bit
    if how == "mean":
        return values.mean(axis=1)
    median = np.median(values, axis=1)
    if how == "median" or continuous:
        return median
    out = median.copy()
    for i, row in enumerate(values):
        grades, counts = np.unique(row, return_counts=True)
        winners = grades[counts == counts.max()]
        if len(winners) == 1:
            out[i] = winners[0]
    return out


def combine_jury(frames: Mapping[str, pl.DataFrame], aggregate: str = "mean") -> pl.DataFrame:
    """One judge-score table (the judges' frames' schema) holding the jury's rows, then every judge's renamed rows.

    `frames`: judge name -> its score rows of one model x benchmark (JUDGE_SCORE_SCHEMA) or of its repeats
    (REPEAT_SCORE_SCHEMA), all over the same answers. The jury's rows come in the first judge's row order.
    """
    if not frames:
        raise ValueError("a jury needs at least one judge")
    judges = list(frames)
    first = frames[judges[0]]
    keys = [c for c in KEY_COLUMNS if c in first.columns] + ["metric"]
    probs = [c for c in JUDGE_PROBABILITY_COLUMNS if c in first.columns]
    for judge in judges[1:]:
        other = frames[judge]
        if other.height != first.height or not other.select(keys).sort(keys).equals(first.select(keys).sort(keys)):
            raise ValueError(f"judge '{judge}' graded other answers than judge '{judges[0]}' (keys {keys})")
    aligned = [first] + [
        first.select(keys).join(frames[j], on=keys, how="left", maintain_order="left") for j in judges[1:]
    ]
    values = np.column_stack([frame["value"].to_numpy().astype(float) for frame in aligned])
    statuses = np.column_stack([frame["status"].to_numpy().astype(object) for frame in aligned])
    valued = np.isfinite(values) & np.isin(statuses, VALUED_STATUSES)
    complete = np.asarray(valued.all(axis=1), dtype=bool)
    continuous = first["metric"].str.ends_with(JUDGE_EXPECTED_SUFFIX).to_numpy()
    jury_value = np.full(first.height, np.nan)
    for flag in (False, True):
        rows = complete & (continuous == flag)
        if rows.any():
            jury_value[rows] = aggregate_values(values[rows], aggregate, continuous=flag)
    jury_status = []
    for i in range(first.height):
        if complete[i]:
            jury_status.append("from_distribution" if "from_distribution" in statuses[i] else "ok")
        else:
            jury_status.append(statuses[i][int(np.argmin(valued[i]))])
    jury = first.with_columns(
        value=pl.Series(jury_value, dtype=pl.Float64),
        status=pl.Series(jury_status, dtype=pl.String),
    )
    if probs:
        stacked = np.stack([frame.select(probs).to_numpy().astype(float) for frame in aligned])
        mixture = stacked.mean(axis=0)  # NaN (null) wherever a judge gave no probabilities
        jury = jury.with_columns(
            [
                pl.Series(column, [None if np.isnan(p) else float(p) for p in mixture[:, k]], dtype=pl.Float64)
                for k, column in enumerate(probs)
            ]
        )
    renamed = [
        frames[judge].with_columns(metric=pl.col("metric") + JUDGE_SEPARATOR + judge).select(first.columns)
        for judge in judges
    ]
    return pl.concat([jury.select(first.columns), *renamed])
