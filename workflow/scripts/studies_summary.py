"""Every study's variants against their baselines: paired tests, Holm, rank agreement (results/summary/studies.parquet)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.studies.tables import write_studies
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_studies(job_of(snakemake), list(snakemake.input.tables), snakemake.input.samples, Path(snakemake.output[0]))
