"""Translate CareQA-close from Spanish to English with the configured translator."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.careqa.llm import llm_sampling
from careval.careqa.translate import translate_careqa
from careval.joblog import job_log
from careval.models.spec import ModelSpec

with job_log(snakemake.log[0]):
    step = snakemake.params.step
    translate_careqa(
        snakemake.input.spanish,
        ModelSpec(**snakemake.params.spec).for_job(snakemake.threads, snakemake.resources.gpu).backend_kwargs(),
        llm_sampling(step),
        snakemake.output.english,
        snakemake.output.audit,
        snakemake.output.report,
    )
