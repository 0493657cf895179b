"""Relaxed Perplexity of one model on one open-ended benchmark."""

import os

# A job a shared engine serves has threads: 0 (engine.smk), so Snakemake exports OMP_NUM_THREADS=0,
# which OpenMP rejects (with a warning per library): it tokenises on one thread.
if os.environ.get("OMP_NUM_THREADS") == "0":
    os.environ["OMP_NUM_THREADS"] = "1"

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.datasets import get_benchmark
from careval.joblog import job_log
from careval.jobs.relaxed_perplexity import run_relaxed_perplexity
from careval.models.spec import job_spec

with job_log(snakemake.log[0]):
    run_relaxed_perplexity(
        Path(snakemake.input.samples),
        Path(snakemake.output[0]),
        get_benchmark(snakemake.wildcards.benchmark, snakemake.params.overrides).prompt,
        job_spec(snakemake).backend_kwargs(),
        snakemake.params.options,
        targets_path=Path(snakemake.output.targets),
    )
