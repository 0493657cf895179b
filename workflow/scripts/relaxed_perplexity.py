"""Relaxed Perplexity of one model on one open-ended benchmark."""
from pathlib import Path

from careval.datasets import get_benchmark
from careval.inference import backend_spec
from careval.joblog import job_log
from careval.metrics.relaxed_perplexity import run_relaxed_perplexity

with job_log(snakemake.log[0]):
    run_relaxed_perplexity(
        Path(snakemake.input.samples),
        Path(snakemake.output[0]),
        get_benchmark(snakemake.wildcards.benchmark, snakemake.params.overrides).prompt,
        backend_spec(snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.params.models_dir), snakemake.threads),
        snakemake.params.options,
    )
