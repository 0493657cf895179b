"""Every analysis figure and table: the report's pages (results/report/pages.pdf), results/figures/*.png, results/summary/*.parquet."""

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
        for key in (
            "summary",
            "samples",
            "resilience",
            "consistency",
            "elo",
            "comparisons",
            "cost",
            *JURY_REPORT_TABLES,
        )
        # the CareQA statistics' tables (report_tables.careqa_tables), where the report shows Table 4 and figures 5-7
        + ("careqa_table4", "careqa_table4_md", "careqa_categories", "careqa_review")
    }
    if "paper_tables" in snakemake.input.keys():  # the tables' folder (results/tables/)
        inputs["paper_tables"] = Path(snakemake.input.paper_tables[0]).parent
    if "studies" in snakemake.input.keys():  # the studies' tests, and each study's per-sample table
        inputs["studies"] = Path(snakemake.input.studies)
        inputs["study_tables"] = [Path(path) for path in snakemake.input.study_tables]
    if "table6" in snakemake.input.keys():
        inputs["table6"] = Path(snakemake.input.table6)
    outputs = {
        "pdf": Path(snakemake.output.pdf),
        "figures": Path(snakemake.params.figures_dir),
        "correlations": Path(snakemake.output.table),
        "clusters": Path(snakemake.output.clusters),
        "rankings": Path(snakemake.output.rankings),
    }
    write_analysis_report(inputs, outputs, job_of(snakemake), snakemake.threads)
