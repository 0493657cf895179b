"""Self-consistency (paper 3.5, C.2): per-prompt variance and coefficient of variation of each metric over r sampled answers."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from careval.analysis.statistics.spread import spread_table
from careval.metrics.registry import metric_spec

# The paper leaves BLEURT out of the CV "for it can take negative values": a CV over a mean near 0
# or below it means nothing. The registry's in_cv says which metrics are on a ratio scale; any
# other metric seen negative is left out for the same reason.


def cv_excluded_metrics(table: pl.DataFrame) -> list[str]:
    """Metrics whose CV is not shown: those the registry keeps out (BLEURT), and any with a negative mean somewhere."""
    negative = set(table.filter(pl.col("mean") < 0)["metric"].unique().to_list())
    named = {m for m in table["metric"].unique().to_list() if not metric_spec(m).in_cv}
    return sorted(negative | named)


def consistency_table(score_files: list[tuple[str, str, Path]]) -> pl.DataFrame:
    """model, benchmark, id, metric, n, mean, variance, scaled_variance, cv (NaN where excluded or undefined)."""
    table = spread_table(score_files)
    excluded = cv_excluded_metrics(table)
    return table.with_columns(cv=pl.when(pl.col("metric").is_in(excluded)).then(None).otherwise(pl.col("cv")))


def write_consistency(score_paths: list[str], output: Path) -> None:
    """Job: the layout <results>/consistency_scores/<model>/<benchmark>.parquet gives model and benchmark."""
    files = [(Path(p).parts[-2], Path(p).stem, Path(p)) for p in score_paths]
    output.parent.mkdir(parents=True, exist_ok=True)
    consistency_table(files).write_parquet(output)
