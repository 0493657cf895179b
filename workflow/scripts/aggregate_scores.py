"""Gather every per-sample score file into results/summary/scores.parquet (+ the per-sample table and the judge's verdict shares)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.aggregate import score_files_from_paths, write_summary
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    # the normalisation reports give the summary's n_skipped
    write_summary(
        score_files_from_paths(snakemake.input.scores, job.tasks),
        Path(snakemake.output.summary),
        Path(snakemake.output.samples),
        dataset_reports=list(snakemake.input.datasets),
        judge_output=Path(snakemake.output.judge),
        mcqa_average=None if job.mcqa_average is None else list(job.mcqa_average),
    )
