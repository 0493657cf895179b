"""The cost of every model x benchmark result: results/summary/cost.parquet."""

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
