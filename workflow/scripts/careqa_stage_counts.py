"""Merge every CareQA stage's counts into stage_counts.json."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.careqa.build import merge_stage_counts
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    merge_stage_counts(list(snakemake.input), snakemake.output[0])
