"""Score one model x benchmark with one metric family."""
from pathlib import Path

from careval.joblog import job_log
from careval.scoring import score_family

with job_log(snakemake.log[0]):
    score_family(
        snakemake.wildcards.family,
        Path(snakemake.input.samples),
        Path(snakemake.output[0]),
        generations_path=Path(snakemake.input.generations) if "generations" in snakemake.input.keys() else None,
        loglik_path=Path(snakemake.input.loglik) if "loglik" in snakemake.input.keys() else None,
        options=snakemake.params.options,
    )
