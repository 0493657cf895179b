"""Grade one model's rephrasings or sampled answers on one benchmark with the Prometheus judge."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.joblog import job_log
from careval.jobs.judge import run_repeat_judge
from careval.models.spec import ModelSpec

with job_log(snakemake.log[0]):
    run_repeat_judge(
        Path(snakemake.input.samples),
        Path(snakemake.input.generations),
        Path(snakemake.input.repeats),
        Path(snakemake.output[0]),
        ModelSpec(**snakemake.params.spec).for_job(snakemake.threads, snakemake.resources.gpu),
        snakemake.params.options,
    )
