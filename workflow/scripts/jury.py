"""The jury's grades of one model on one benchmark (or of its repeats) from its judges' files."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.jury import run_jury

with job_log(snakemake.log[0], snakemake.output):
    run_jury([Path(path) for path in snakemake.input], Path(snakemake.output[0]), job_of(snakemake))
