"""Paired comparisons of every pair of models: results/summary/comparisons.parquet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.comparisons import write_comparisons

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    # <datasets>/<benchmark>.parquet and <results>/generations/<model>/<benchmark>.parquet
    datasets = {Path(p).stem: Path(p) for p in snakemake.input.datasets}
    generations = {(Path(p).parent.name, Path(p).stem): Path(p) for p in snakemake.input.generations}
    repeats = [Path(p) for p in snakemake.input.repeats]
    write_comparisons(Path(snakemake.input.samples), repeats, Path(snakemake.output[0]), job, datasets, generations)
