"""Rephrase one model's answers on one benchmark k times with the configured rephrasing LLM."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log, requests_record
from careval.jobs.repeats import run_rephrasing

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    run_rephrasing(
        Path(snakemake.input.generations),
        job.rephraser.for_job(snakemake.threads, snakemake.resources.gpu),
        job.k,
        job.sampling,
        Path(snakemake.output[0]),
        limit=job.limit,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
    )
