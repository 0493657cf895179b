"""CareQA_en_open: the validated pairs of both iterations, each with the iteration it comes from."""

from careval.careqa.rephrase import build_open
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    build_open(
        snakemake.input.english, list(snakemake.input.validation), snakemake.output.open, snakemake.output.report
    )
