"""Resilience to rephrasing (paper 3.4, C.1): per-sample variance of each metric over k rephrasings of a model's answer."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from careval.analysis.statistics.spread import spread_table


def resilience_table(score_files: list[tuple[str, str, Path]]) -> pl.DataFrame:
    """model, benchmark, id, metric, n, mean, variance, scaled_variance (variance / max - min of the metric's variance
    column over every model and sample of the benchmark, the paper's C.1), scaled_variance_value_range (variance /
    the metric's observed max - min value: careval's earlier reading); see careval.analysis.statistics.spread.spread_table."""
    return spread_table(score_files).drop("cv")


def write_resilience(score_paths: list[str], output: Path) -> None:
    """Job: the layout <results>/rephrase_scores/<model>/<benchmark>.parquet gives model and benchmark."""
    files = [(Path(p).parts[-2], Path(p).stem, Path(p)) for p in score_paths]
    output.parent.mkdir(parents=True, exist_ok=True)
    resilience_table(files).write_parquet(output)
