"""Ask, for each rephrased pair of one iteration, whether the ground truth is its only valid answer."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.careqa.llm import llm_sampling
from careval.careqa.rephrase import build_validation
from careval.joblog import job_log
from careval.models.spec import ModelSpec

with job_log(snakemake.log[0]):
    step = snakemake.params.step
    build_validation(
        snakemake.input.candidates,
        ModelSpec(**snakemake.params.spec).for_job(snakemake.threads, snakemake.resources.gpu).backend_kwargs(),
        llm_sampling(step),
        int(snakemake.wildcards.iteration),
        snakemake.output.audit,
        snakemake.output.report,
    )
