"""The jury job: read each judge's score file of one model x benchmark (or of its repeats) and write the jury's."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from careval.metrics.jury import combine_jury
from careval.specs import JuryJob


def run_jury(paths: list[Path], output_path: Path, job: JuryJob) -> None:
    """`paths`: one file per judge, in the job's judge order."""
    if len(paths) != len(job.judges):
        raise ValueError(f"the jury has {len(job.judges)} judges but {len(paths)} score files were given")
    frames = {judge: pl.read_parquet(path) for judge, path in zip(job.judges, paths)}
    combined = combine_jury(frames, job.aggregate)
    print(
        f"jury: {len(job.judges)} judges ({', '.join(job.judges)}), aggregate {job.aggregate}: {combined.height} rows"
    )
    output_path.parent.mkdir(parents=True, exist_ok=True)
    combined.write_parquet(output_path)
