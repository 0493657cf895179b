"""The cost of every model x benchmark result: results/summary/cost.parquet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.cost import write_cost
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    keys = snakemake.input.keys()
    inference = {
        (model, benchmark): tuple(
            Path(snakemake.input[f"{kind}/{model}/{benchmark}"]) if f"{kind}/{model}/{benchmark}" in keys else None
            for kind in ("generations", "loglik")
        )
        for model in job.models
        for benchmark in job.benchmarks
    }
    write_cost(Path(snakemake.params.benchmarks_dir), inference, job, Path(snakemake.output[0]))
