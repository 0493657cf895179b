"""Fetch or copy one MIR edition's booklet and answer key (an address or a local file each)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.canonical import job_of
from careval.careqa.acquire import acquire_edition
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    (edition,) = job_of(snakemake).editions
    acquire_edition(edition, snakemake.output.booklet, snakemake.output.key)
