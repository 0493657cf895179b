"""CareQA_en_open: the validated pairs of both iterations, each with the iteration it comes from."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.careqa.rephrase import build_open
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    build_open(
        snakemake.input.english, list(snakemake.input.validation), snakemake.output.open, snakemake.output.report
    )
