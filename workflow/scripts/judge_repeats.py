"""Grade one model's rephrasings or sampled answers on one benchmark with the Prometheus judge."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log, requests_record
from careval.jobs.judge import run_judge

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    run_judge(
        Path(snakemake.input.samples),
        Path(snakemake.input.generations),
        Path(snakemake.output[0]),
        job.judge.for_job(snakemake.threads, snakemake.resources.gpu),
        job.options,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
        repeats_path=Path(snakemake.input.repeats),
    )
