"""The report's figures as a table: results/figures/index.tsv (name, kind, caption, category)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.analysis_report import write_figure_index

with job_log(snakemake.log[0], snakemake.output):
    write_figure_index(job_of(snakemake).figures, Path(snakemake.output[0]))
