"""Run one model on one benchmark: log-likelihoods, and generations when the rule asks for them."""
from pathlib import Path

from careval.datasets import get_benchmark
from careval.inference import backend_spec, run_inference
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    run_inference(
        Path(snakemake.input.samples),
        get_benchmark(snakemake.wildcards.benchmark, snakemake.params.overrides),
        backend_spec(snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.params.models_dir),
                     snakemake.threads, gpus=snakemake.resources.gpu),
        snakemake.params.generation,
        loglik_path=Path(snakemake.output.loglik),
        generations_path=Path(snakemake.output.generations) if "generations" in snakemake.output.keys() else None,
    )
