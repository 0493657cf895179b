"""One study's per-sample table: every variant's values beside the baseline's (results/studies/<study>/sample_scores.parquet)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.studies.tables import write_study_table
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_study_table(job_of(snakemake), list(snakemake.input), Path(snakemake.output[0]))
