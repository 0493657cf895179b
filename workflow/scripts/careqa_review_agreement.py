"""The appendix A.3 agreement statistics of the filled review sheets of one kind."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.canonical import job_of
from careval.careqa.review import write_agreement
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_agreement(list(snakemake.input), snakemake.output[0], job_of(snakemake).review["min_reviewers"])
