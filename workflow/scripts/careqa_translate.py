"""Translate CareQA-close from Spanish to English with the configured translator."""
from careval.careqa.llm import llm_sampling, llm_spec
from careval.careqa.translate import translate_careqa
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    step = snakemake.params.step
    translate_careqa(
        snakemake.input.spanish,
        llm_spec(step, snakemake.params.models, snakemake.params.models_dir, snakemake.threads, "translator"),
        llm_sampling(step),
        snakemake.output.english, snakemake.output.audit, snakemake.output.report,
    )
