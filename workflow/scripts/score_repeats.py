"""Score a file of repeated outputs (rephrasings or samples) with every text metric, plus perplexity per repeat when given."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.statistics.spread import score_repeat_file
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    score_repeat_file(
        Path(snakemake.input.samples),
        Path(snakemake.input.repeats),
        job.family_names,
        job.options(),
        Path(snakemake.output[0]),
        loglik_path=Path(snakemake.input.loglik) if "loglik" in snakemake.input.keys() else None,
        min_chars=job.min_chars,
    )
