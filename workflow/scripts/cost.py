"""The cost of every model x benchmark result: results/summary/cost.parquet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.cost import write_cost
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_cost(
        Path(snakemake.params.benchmarks_dir),
        Path(snakemake.params.logs_dir),
        job_of(snakemake),
        Path(snakemake.output.cost),
        Path(snakemake.output.cache),
    )
