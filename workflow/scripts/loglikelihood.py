"""Score one model's log-likelihoods on one benchmark (MCQA options or reference answers)."""
from pathlib import Path

from careval.datasets import get_benchmark
from careval.inference import backend_spec, run_loglik
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    spec = backend_spec(snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.params.models_dir), snakemake.threads)
    benchmark = get_benchmark(snakemake.wildcards.benchmark, snakemake.params.overrides)
    run_loglik(Path(snakemake.input.samples), benchmark, spec, Path(snakemake.output[0]))
