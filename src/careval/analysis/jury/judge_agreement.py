"""How far a jury's judges agree, per benchmark x rubric, over their grades judge_<rubric>@<judge> of the same answers.

Units are the graded answers (model x sample), raters the judges. Statistics (careval.analysis.statistics.reliability):
Krippendorff's alpha (interval, ordinal), ICC(2,1) and ICC(2,k) over all judges; quadratic-weighted kappa per
pair of judges; Kendall's tau per pair between the model rankings (each model's mean grade) the two judges give.
The intervals resample the benchmark's sample ids (every model's answer to a drawn sample comes along, so a
model ranking is recomputed on each draw), seeded, percentile intervals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import combinations

import numpy as np
import polars as pl

from careval.analysis.statistics.reliability import icc, kendall_tau, krippendorff_alpha, quadratic_kappa
from careval.metrics.jury import split_judge
from careval.metrics.registry import JUDGE_EXPECTED_SUFFIX, JUDGE_PREFIX, JUDGE_SEPARATOR, VALUED_STATUSES
from careval.schemas import JUDGE_AGREEMENT_SCHEMA

GRADE_SCALE = [1, 2, 3, 4, 5]


def judge_grades(samples: pl.DataFrame) -> pl.DataFrame:
    """The per-judge grades of a per-sample table: benchmark, rubric, judge, model, id, value (valued rows only,
    NaN elsewhere), one row per judge grade judge_<rubric>@<judge> (not the _expected scores)."""
    rows = samples.filter(
        pl.col("metric").str.starts_with(JUDGE_PREFIX) & pl.col("metric").str.contains(JUDGE_SEPARATOR, literal=True)
    )
    split = [split_judge(m) for m in rows["metric"].to_list()]
    rows = rows.with_columns(
        base=pl.Series([base for base, _ in split], dtype=pl.String),
        judge=pl.Series([judge for _, judge in split], dtype=pl.String),
    ).filter(~pl.col("base").str.ends_with(JUDGE_EXPECTED_SUFFIX))
    return rows.select(
        "benchmark",
        rubric=pl.col("base").str.slice(len(JUDGE_PREFIX)),
        judge="judge",
        model="model",
        id="id",
        value=pl.when(pl.col("status").is_in(VALUED_STATUSES)).then(pl.col("value")).otherwise(float("nan")),
    )


def rater_matrix(
    grades: pl.DataFrame, raters: list[str], rater_column: str = "judge"
) -> tuple[np.ndarray, pl.DataFrame]:
    """(raters x units matrix with NaN where missing, the units as model, id in column order) of one benchmark x rubric."""
    wide = grades.pivot(on=rater_column, index=["model", "id"], values="value", aggregate_function="mean").sort(
        "model", "id"
    )
    for rater in raters:
        if rater not in wide.columns:
            wide = wide.with_columns(pl.lit(float("nan")).alias(rater))
    matrix = wide.select(raters).to_numpy().astype(float).T
    return matrix, wide.select("model", "id")


def _statistics(matrix: np.ndarray, units: pl.DataFrame, judges: list[str]) -> dict[tuple[str, str], tuple[float, int]]:
    """Every statistic of one raters x units matrix: (statistic, judges) -> (value, n)."""
    out: dict[tuple[str, str], tuple[float, int]] = {}
    everyone = " | ".join(judges)
    pairable = int((np.isfinite(matrix).sum(axis=0) >= 2).sum())
    complete = int(np.isfinite(matrix).all(axis=0).sum())
    for level in ("interval", "ordinal"):
        out[(f"krippendorff_alpha_{level}", everyone)] = (krippendorff_alpha(matrix, level), pairable)
    single, average = icc(matrix)
    out[("icc_2_1", everyone)] = (single, complete)
    out[("icc_2_k", everyone)] = (average, complete)
    models = units["model"].to_numpy()
    names = np.unique(models)
    for i, j in combinations(range(len(judges)), 2):
        pair = f"{judges[i]} | {judges[j]}"
        both = int((np.isfinite(matrix[i]) & np.isfinite(matrix[j])).sum())
        out[("quadratic_kappa", pair)] = (quadratic_kappa(matrix[i], matrix[j], GRADE_SCALE), both)
        means = np.array(
            [
                [np.nanmean(row[models == m]) if np.isfinite(row[models == m]).any() else math.nan for m in names]
                for row in (matrix[i], matrix[j])
            ]
        )
        out[("kendall_tau_ranking", pair)] = (
            kendall_tau(means[0], means[1]),
            int(np.isfinite(means).all(axis=0).sum()),
        )
    return out


def bootstrap_intervals(
    units: pl.DataFrame,
    statistic: Callable[[np.ndarray], dict],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict:
    """Percentile intervals of every value `statistic(columns)` returns, over resamples of the units' sample ids.

    `statistic` takes the unit columns of one draw (indices into `units`, with repeats) and returns
    {key: value}; the interval of a key ignores the draws where it is NaN (none: no interval).
    """
    if resamples <= 0:
        return {}
    rng = np.random.default_rng(seed)
    ids = units["id"].to_numpy()
    distinct = np.unique(ids)
    members = {sample: np.flatnonzero(ids == sample) for sample in distinct}
    draws: dict = {}
    for _ in range(resamples):
        chosen = rng.choice(distinct, size=distinct.size, replace=True)
        columns = np.concatenate([members[s] for s in chosen])
        for key, value in statistic(columns).items():
            draws.setdefault(key, []).append(value)
    tail = (1 - confidence) / 2 * 100
    intervals = {}
    for key, values in draws.items():
        finite = np.asarray([v for v in values if math.isfinite(v)])
        if finite.size:
            intervals[key] = (float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail)))
    return intervals


def judge_agreement(samples: pl.DataFrame, judges: list[str], bootstrap=None) -> pl.DataFrame:
    """JUDGE_AGREEMENT_SCHEMA rows per benchmark x rubric of a per-sample table; `bootstrap` (resamples,
    confidence, seed) or None for no intervals. Fewer than two judges: no rows."""
    grades = judge_grades(samples)
    rows = []
    if len(judges) < 2:
        return pl.DataFrame(schema=JUDGE_AGREEMENT_SCHEMA)
    for (benchmark, rubric), block in grades.group_by("benchmark", "rubric", maintain_order=True):
        matrix, units = rater_matrix(block, judges)
        values = _statistics(matrix, units, judges)
        intervals = {}
        if bootstrap is not None:
            intervals = bootstrap_intervals(
                units,
                lambda cols, matrix=matrix, units=units: {
                    key: v for key, (v, _) in _statistics(matrix[:, cols], units[cols], judges).items()
                },
                bootstrap.resamples,
                bootstrap.confidence,
                bootstrap.seed,
            )
        for (statistic, who), (value, n) in values.items():
            low, high = intervals.get((statistic, who), (None, None))
            rows.append(
                {
                    "benchmark": benchmark,
                    "rubric": rubric,
                    "statistic": statistic,
                    "judges": who,
                    "value": value,
                    "ci_low": low,
                    "ci_high": high,
                    "n": n,
                }
            )
    return pl.DataFrame(rows, schema=JUDGE_AGREEMENT_SCHEMA)
