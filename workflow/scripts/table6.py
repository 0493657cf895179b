"""Paper Table 6: the example questions' Relaxed Cross-Entropy per model (results/tables/table6_relaxed_perplexity_examples.*)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.tables.table6 import write_table6
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    outputs = {ext: Path(snakemake.output[ext]) for ext in ("csv", "md", "tex")}
    write_table6(job_of(snakemake), list(snakemake.input), outputs)
