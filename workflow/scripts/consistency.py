"""Per-prompt variance and CV over sampled answers, every model and benchmark: results/summary/consistency.parquet."""

from pathlib import Path

from careval.analysis.consistency import write_consistency
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    write_consistency(list(snakemake.input), Path(snakemake.output[0]))
