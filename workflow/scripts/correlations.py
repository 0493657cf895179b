"""Every analysis figure and table: results/correlations.pdf, results/figures/*.png, results/summary/*.parquet."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there and this process waits

from pathlib import Path

from careval.canonical import job_of
from careval.joblog import job_log
from careval.jobs.analysis_report import write_analysis_report
from careval.specs import JURY_REPORT_TABLES

with job_log(snakemake.log[0], snakemake.output):
    inputs = {
        key: Path(snakemake.input[key]) if key in snakemake.input.keys() else None
        for key in ("summary", "samples", "resilience", "consistency", "elo", *JURY_REPORT_TABLES)
    }
    outputs = {
        "pdf": Path(snakemake.output.pdf),
        "figures": Path(snakemake.params.figures_dir),
        "correlations": Path(snakemake.output.table),
        "clusters": Path(snakemake.output.clusters),
        "rankings": Path(snakemake.output.rankings),
    }
    write_analysis_report(inputs, outputs, job_of(snakemake), snakemake.threads)
