"""Read one benchmark from its source and write its canonical samples."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.datasets import build_benchmark
from careval.joblog import job_log
from careval.results_check import job_digest

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    build_benchmark(job.entry, Path(snakemake.output.samples), limit=job.limit, made_by=job_digest(job))
