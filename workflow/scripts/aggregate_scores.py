"""Gather every per-sample score file into results/summary/scores.parquet (+ the per-sample table)."""
from pathlib import Path

from careval.analysis.aggregate import score_files_from_paths, write_summary
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    write_summary(score_files_from_paths(snakemake.input, snakemake.params.tasks), Path(snakemake.output.summary),
                  Path(snakemake.output.samples))
