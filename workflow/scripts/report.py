"""results/correlations.pdf: the run's provenance on the first page, then the report's pages (careval.jobs.analysis_report)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.joblog import job_log
from careval.jobs.analysis_report import write_report

with job_log(snakemake.log[0], snakemake.output):
    write_report(Path(snakemake.input.manifest), Path(snakemake.input.pages), Path(snakemake.output[0]))
