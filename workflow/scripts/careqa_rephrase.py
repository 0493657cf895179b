"""Rephrase each kept question with two prompts and let the rephraser select one or neither (iteration 1)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.careqa.llm import llm_sampling
from careval.careqa.rephrase import build_iteration1
from careval.joblog import job_log
from careval.models.spec import ModelSpec

with job_log(snakemake.log[0]):
    step = snakemake.params.step
    build_iteration1(
        snakemake.input.english,
        snakemake.input.screened,
        ModelSpec(**snakemake.params.spec).for_job(snakemake.threads, snakemake.resources.gpu).backend_kwargs(),
        llm_sampling(step),
        snakemake.output.audit,
        snakemake.output.report,
    )
