"""Per-prompt variance and CV over sampled answers, every model and benchmark: results/summary/consistency.parquet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.statistics.consistency import write_consistency
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_consistency(list(snakemake.input), Path(snakemake.output[0]))
