"""Screen out the questions that ask for the wrong option (appendix A.2 keyword filter)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.careqa.rephrase import build_screened
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    build_screened(snakemake.input.english, snakemake.input.spanish, snakemake.output.screened, snakemake.output.report)
