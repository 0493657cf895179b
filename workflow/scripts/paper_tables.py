"""The paper's Appendix E tables: results/tables/table<N>_<slug>.{csv,md,tex}."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.analysis.tables.paper_table_files import write_paper_tables
from careval.canonical import job_of
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    write_paper_tables(
        Path(snakemake.input.summary),
        Path(snakemake.input.samples),
        job_of(snakemake),
        Path(snakemake.params.tables_dir),
    )
