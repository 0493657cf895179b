"""The jury's agreement, bias and stability tables, and every metric's agreement with people's ratings."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.jury_report import OUTPUTS, write_jury_report

with job_log(snakemake.log[0], snakemake.output):
    inputs = {key: snakemake.input.get(key) for key in ("samples", "resilience", "consistency", "ratings")}
    inputs["generations"] = list(snakemake.input.generations)
    inputs["datasets"] = list(snakemake.input.datasets)
    write_jury_report(inputs, {key: Path(snakemake.output[key]) for key in OUTPUTS}, job_of(snakemake))
