"""Relaxed Perplexity of one model on one open-ended benchmark."""

import os

# A job a shared engine serves has threads: 0 (engine.smk), so Snakemake exports OMP_NUM_THREADS=0,
# which OpenMP rejects (with a warning per library): it tokenises on one thread.
if os.environ.get("OMP_NUM_THREADS") == "0":
    os.environ["OMP_NUM_THREADS"] = "1"

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log, requests_record
from careval.jobs.relaxed_perplexity import run_relaxed_perplexity
from careval.models.spec import model_for_job

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    run_relaxed_perplexity(
        Path(snakemake.input.samples),
        Path(snakemake.output[0]),
        job.entry.prompt,
        model_for_job(job.model, snakemake),
        job.options,
        targets_path=Path(snakemake.output.targets),
        record=requests_record(snakemake.log[0]),
        instruction=job.entry.instruction,
    )
