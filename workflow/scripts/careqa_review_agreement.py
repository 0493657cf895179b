"""The appendix A.3 agreement statistics of the filled review sheets of one kind."""

from careval.careqa.review import write_agreement
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    write_agreement(list(snakemake.input), snakemake.output[0], snakemake.params.min_reviewers)
