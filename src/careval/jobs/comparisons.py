"""The comparisons job: every pair of models of each model set, compared on the per-sample table
(careval.analysis.comparisons), written as results/summary/comparisons.parquet."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from careval.analysis.comparisons import ComparisonsJob, GenerationNoise, compare_models
from careval.schemas import REPEAT_SCORE_SCHEMA


def read_repeats(paths: list[Path]) -> pl.DataFrame:
    """The self-consistency score files (<results>/consistency_*/<model>/<benchmark>.parquet), stacked with the
    model and benchmark their path names."""
    frames = [
        pl.read_parquet(path)
        .cast(REPEAT_SCORE_SCHEMA)
        .select(pl.lit(path.parent.name).alias("model"), pl.lit(path.stem).alias("benchmark"), *REPEAT_SCORE_SCHEMA)
        for path in map(Path, paths)
    ]
    schema = {"model": pl.String, "benchmark": pl.String, **REPEAT_SCORE_SCHEMA}
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def write_comparisons(samples: Path, repeats: list[Path], output: Path, job: ComparisonsJob) -> pl.DataFrame:
    """samples: the per-sample table; repeats: self-consistency score files (read only when job.two_level)."""
    noise = GenerationNoise(read_repeats(repeats), job.seed) if job.two_level and repeats else None
    table = compare_models(pl.read_parquet(samples), job, noise)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(output)
    return table
