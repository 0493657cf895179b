"""Parse every acquired edition into CareQA-close (Spanish) and count annulled and misparsed questions."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.canonical import job_of
from careval.careqa.build import parse_editions
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    parse_editions(
        list(job_of(snakemake).editions),
        list(snakemake.input.booklets),
        list(snakemake.input.answer_keys),
        snakemake.output.spanish,
        snakemake.output.report,
    )
