"""Correlation analyses and figures: results/correlations.pdf and results/figures/*.png."""
from pathlib import Path

from careval.analysis.figures import write_correlation_report
from careval.joblog import job_log

with job_log(snakemake.log[0]):
    write_correlation_report(Path(snakemake.input[0]), Path(snakemake.output.pdf), Path(snakemake.output.figures),
                             Path(snakemake.output.table), snakemake.params.methods)
