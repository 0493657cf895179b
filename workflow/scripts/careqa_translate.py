"""Translate CareQA-close from Spanish to English with the configured translator."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.backends.cached import job_backend
from careval.canonical import job_of
from careval.careqa.translate import translate_careqa
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    with job_backend(job.model.for_job(snakemake.threads, snakemake.resources.gpu)) as backend:
        translate_careqa(
            snakemake.input.spanish,
            backend,
            job.sampling,
            snakemake.output.english,
            snakemake.output.audit,
            snakemake.output.report,
        )
