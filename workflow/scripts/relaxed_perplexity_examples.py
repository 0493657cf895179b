"""Relaxed Perplexity of one model of a study on the study's example questions (paper Table 6)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.relaxed_perplexity_examples import run_examples
from careval.models.spec import model_for_job

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    spec = model_for_job(job.model, snakemake)
    run_examples(job, spec, Path(snakemake.output[0]))
