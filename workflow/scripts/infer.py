"""Run one model on one benchmark: log-likelihoods, and generations when the rule asks for them."""
from pathlib import Path

from careval.datasets import get_benchmark
from careval.inference import run_inference
from careval.joblog import job_log
from careval.models.spec import job_spec

with job_log(snakemake.log[0]):
    run_inference(
        Path(snakemake.input.samples),
        get_benchmark(snakemake.wildcards.benchmark, snakemake.params.overrides),
        job_spec(snakemake).backend_kwargs(),
        snakemake.params.generation,
        loglik_path=Path(snakemake.output.loglik),
        generations_path=Path(snakemake.output.generations) if "generations" in snakemake.output.keys() else None,
        checkpoint_every=snakemake.params.checkpoint_every,
    )
