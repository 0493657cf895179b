"""Screen out the questions that ask for the wrong option (appendix A.2 keyword filter)."""

from careval.careqa.rephrase import build_screened
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    build_screened(snakemake.input.english, snakemake.input.spanish, snakemake.output.screened, snakemake.output.report)
