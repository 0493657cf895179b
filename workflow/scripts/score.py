"""Score one model x benchmark with every metric family of its task."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.datasets import get_benchmark
from careval.joblog import job_log
from careval.scoring import score_benchmark

with job_log(snakemake.log[0]):
    score_benchmark(
        Path(snakemake.input.samples),
        {family: Path(path) for family, path in snakemake.output.items()},
        generations_path=Path(snakemake.input.generations) if "generations" in snakemake.input.keys() else None,
        loglik_path=Path(snakemake.input.loglik),
        options=snakemake.params.options,
        min_chars=get_benchmark(snakemake.wildcards.benchmark).min_chars,
    )
