"""A blind review sheet of a study's rephrasers (results/studies/<study>/review_sheet.csv and review_key.csv)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.studies.rephrasing_review import write_review_sheet
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_review_sheet(
        job_of(snakemake), list(snakemake.input), Path(snakemake.output.sheet), Path(snakemake.output.key)
    )
