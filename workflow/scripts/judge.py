"""Grade one model's generations on one benchmark with the Prometheus judge."""
from pathlib import Path

from careval.joblog import job_log
from careval.metrics.judge import run_judge

with job_log(snakemake.log[0]):
    run_judge(
        Path(snakemake.input.samples),
        Path(snakemake.input.generations),
        Path(snakemake.output[0]),
        snakemake.params.models,
        snakemake.params.options,
        Path(snakemake.params.models_dir),
        snakemake.threads,
    )
