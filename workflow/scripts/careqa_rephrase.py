"""Rephrase each kept question with two prompts and let the rephraser select one or neither (iteration 1)."""
from careval.careqa.llm import llm_sampling, llm_spec
from careval.careqa.rephrase import build_iteration1
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    step = snakemake.params.step
    build_iteration1(
        snakemake.input.english, snakemake.input.screened,
        llm_spec(step, snakemake.params.models, snakemake.params.models_dir, snakemake.threads, "rephraser"),
        llm_sampling(step),
        snakemake.output.iteration1, snakemake.output.report,
    )
