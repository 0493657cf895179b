"""Rephrase one model's answers on one benchmark k times with the configured rephrasing LLM."""
from pathlib import Path

from careval.inference import backend_spec
from careval.joblog import job_log
from careval.tasks.repeats import run_rephrasing

with job_log(snakemake.log[0]):
    settings = snakemake.params.settings
    run_rephrasing(
        Path(snakemake.input.generations),
        backend_spec(snakemake.params.name, snakemake.params.entry, Path(snakemake.params.models_dir),
                     snakemake.threads, gpus=snakemake.resources.gpu),
        settings["k"], snakemake.params.generation, settings["sampling"], Path(snakemake.output[0]),
        limit=settings["limit"],
    )
