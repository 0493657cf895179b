"""Paired comparisons of every pair of models: results/summary/comparisons.parquet."""

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.comparisons import write_comparisons

with job_log(snakemake.log[0], snakemake.output):
    write_comparisons(
        Path(snakemake.input.samples),
        [Path(p) for p in snakemake.input.repeats],
        Path(snakemake.output[0]),
        job_of(snakemake),
    )
