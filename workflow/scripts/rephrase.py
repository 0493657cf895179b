"""Rephrase one model's answers on one benchmark k times with the configured rephrasing LLM."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.joblog import job_log
from careval.jobs.repeats import run_rephrasing
from careval.models.spec import ModelSpec

with job_log(snakemake.log[0]):
    settings = snakemake.params.settings
    run_rephrasing(
        Path(snakemake.input.generations),
        ModelSpec(**snakemake.params.spec).for_job(snakemake.threads, snakemake.resources.gpu).backend_kwargs(),
        settings["k"],
        snakemake.params.generation,
        settings["sampling"],
        Path(snakemake.output[0]),
        limit=settings["limit"],
        checkpoint_every=snakemake.params.checkpoint_every,
    )
