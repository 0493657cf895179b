"""Score one model x benchmark with every metric family of its task."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.scoring import score_benchmark

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    score_benchmark(
        Path(snakemake.input.samples),
        # a task's job names each family's file; a one-family job (rule score_family) has one
        {family: Path(snakemake.output.get(family, snakemake.output[0])) for family in job.family_names},
        generations_path=Path(snakemake.input.generations) if "generations" in snakemake.input.keys() else None,
        loglik_path=Path(snakemake.input.loglik),
        options=job.options(),
        min_chars=job.min_chars,
    )
