"""Run one model on one benchmark: log-likelihoods, and generations when the rule asks for them."""

import os

# A job a shared engine serves has threads: 0 (engine.smk), so Snakemake exports OMP_NUM_THREADS=0,
# which OpenMP rejects (with a warning per library): it tokenises on one thread.
if os.environ.get("OMP_NUM_THREADS") == "0":
    os.environ["OMP_NUM_THREADS"] = "1"

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.inference import run_inference
from careval.joblog import job_log, requests_record
from careval.models.spec import model_for_job

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    run_inference(
        Path(snakemake.input.samples),
        job.entry,
        model_for_job(job.model, snakemake),
        job.sampling,
        loglik_path=Path(snakemake.output.loglik),
        generations_path=Path(snakemake.output.generations) if "generations" in snakemake.output.keys() else None,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
    )
