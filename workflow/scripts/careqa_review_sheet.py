"""Draw the stratified human-review sample of one kind (translation or rephrasing) and write its blank sheet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from careval.canonical import job_of
from careval.careqa.review import export_review
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    export_review(
        snakemake.wildcards.review_kind,
        snakemake.input.english,
        snakemake.input.spanish,
        snakemake.input.open,
        job_of(snakemake).review,
        snakemake.output.sheet,
        snakemake.output.summary,
    )
