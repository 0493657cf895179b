"""Generate one model's answers to one open-ended benchmark."""
from pathlib import Path

from careval.datasets import get_benchmark
from careval.inference import backend_spec, run_generation
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    spec = backend_spec(snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.params.models_dir), snakemake.threads)
    benchmark = get_benchmark(snakemake.wildcards.benchmark, snakemake.params.overrides)
    run_generation(Path(snakemake.input.samples), benchmark, spec, snakemake.params.generation, Path(snakemake.output[0]))
