"""The run's provenance: results/manifest.json (careval.manifest)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.manifest import write_manifest

with job_log(snakemake.log[0], snakemake.output):
    write_manifest(job_of(snakemake), Path(snakemake.output[0]))
