"""Gather every per-sample score file into results/summary/scores.parquet (+ the per-sample table)."""
from pathlib import Path

from careval.analysis.aggregate import score_files_from_paths, write_summary
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    # named inputs `scores` and `datasets` (the normalisation reports, for n_skipped); a rule that names
    # neither gives only score files, and n_skipped stays null
    named = snakemake.input.keys()
    write_summary(score_files_from_paths(snakemake.input.scores if "scores" in named else snakemake.input,
                                         snakemake.params.tasks),
                  Path(snakemake.output.summary), Path(snakemake.output.samples),
                  dataset_reports=list(snakemake.input.datasets) if "datasets" in named else None)
