"""Does a jury move less than one judge? Its grades' spread under rephrasing and resampling beside each judge's.

Reads the resilience and self-consistency tables (careval.analysis.statistics.resilience / consistency: per model x sample
x metric, the scaled variance of a metric over the repeats), where the jury's judge_<rubric> and every judge's
judge_<rubric>@<judge> are metrics beside the text metrics, and summarises per benchmark x analysis x rubric x
rater (the jury, or one judge) x kind (grade, expected): the mean scaled variance over the answers, and its
ratio to the jury's (above 1: the judge alone moves more than the jury).
"""

from __future__ import annotations

import polars as pl

from careval.metrics.jury import split_judge
from careval.metrics.registry import JUDGE_EXPECTED_SUFFIX, JUDGE_PREFIX
from careval.schemas import JURY_STABILITY_SCHEMA

JURY = "jury"


def jury_stability(spreads: dict[str, pl.DataFrame | None]) -> pl.DataFrame:
    """JURY_STABILITY_SCHEMA rows from {"resilience": table, "consistency": table} (None: not run)."""
    rows = []
    for analysis, spread in spreads.items():
        if spread is None:
            continue
        judged = spread.filter(pl.col("metric").str.starts_with(JUDGE_PREFIX))
        if judged.is_empty():
            continue
        split = [split_judge(m) for m in judged["metric"].to_list()]
        base = pl.Series([b for b, _ in split], dtype=pl.String)
        judged = judged.with_columns(
            kind=pl.when(base.str.ends_with(JUDGE_EXPECTED_SUFFIX)).then(pl.lit("expected")).otherwise(pl.lit("grade")),
            rubric=base.str.slice(len(JUDGE_PREFIX)).str.replace(f"{JUDGE_EXPECTED_SUFFIX}$", ""),
            rater=pl.Series([j or JURY for _, j in split], dtype=pl.String),
        )
        if judged["rater"].n_unique() < 2:
            continue  # one judge and no jury: nothing to compare
        summary = (
            judged.filter(pl.col("scaled_variance").is_finite())
            .group_by("benchmark", "rubric", "kind", "rater", maintain_order=True)
            .agg(mean_scaled_variance=pl.col("scaled_variance").mean(), n=pl.len())
        )
        jury = summary.filter(pl.col("rater") == JURY).select(
            "benchmark", "rubric", "kind", jury_variance="mean_scaled_variance"
        )
        summary = summary.join(jury, on=["benchmark", "rubric", "kind"], how="left").with_columns(
            ratio_to_jury=pl.when(pl.col("jury_variance") > 0).then(
                pl.col("mean_scaled_variance") / pl.col("jury_variance")
            ),
            analysis=pl.lit(analysis),
        )
        rows.append(summary.select(list(JURY_STABILITY_SCHEMA)).cast(JURY_STABILITY_SCHEMA))
    if not rows:
        return pl.DataFrame(schema=JURY_STABILITY_SCHEMA)
    return pl.concat(rows).sort("benchmark", "analysis", "rubric", "kind", "rater")
