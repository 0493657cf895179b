"""Per-sample variance over rephrasings, every model and benchmark: results/summary/resilience.parquet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.statistics.resilience import write_resilience
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_resilience(list(snakemake.input), Path(snakemake.output[0]))
