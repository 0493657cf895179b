"""Keep the open-ended pairs whose only correct answer is the ground truth (iteration 2): CareQA_en_open."""
from careval.careqa.llm import llm_sampling
from careval.careqa.rephrase import build_open
from careval.joblog import job_log
from careval.models.spec import ModelSpec

with job_log(snakemake.log[0]):
    step = snakemake.params.step
    build_open(
        snakemake.input.english, snakemake.input.iteration1,
        ModelSpec(**snakemake.params.spec).for_job(snakemake.threads, snakemake.resources.gpu).backend_kwargs(),
        llm_sampling(step),
        snakemake.output.open, snakemake.output.audit, snakemake.output.report,
    )
