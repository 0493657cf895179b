"""Rephrase each kept question with two prompts and let the rephraser select one or neither (iteration 1)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.backends.cached import job_backend
from careval.canonical import job_of
from careval.careqa.rephrase import build_iteration1
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    with job_backend(job.model.for_job(snakemake.threads, snakemake.resources.gpu)) as backend:
        build_iteration1(
            snakemake.input.english,
            snakemake.input.screened,
            backend,
            job.sampling,
            snakemake.output.audit,
            snakemake.output.report,
        )
