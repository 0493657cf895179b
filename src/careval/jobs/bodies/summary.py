"""The jobs over every model and benchmark: the summary tables, their analyses, the report and the run's
provenance.

Each function is the body of a rule's job (its `body` param: careval.jobs.run), given the job's `snakemake` object;
it imports what it needs itself, so a job imports only its own body's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from careval.canonical import job_of


def aggregate_scores(snakemake: Any) -> None:
    """Gather every per-sample score file into results/summary/scores.parquet (+ the per-sample table and the judge's verdict shares)."""
    from careval.analysis.aggregate import score_files_from_paths, write_summary

    job = job_of(snakemake)
    # the normalisation reports give the summary's n_skipped
    write_summary(
        score_files_from_paths(snakemake.input.scores, job.tasks),
        Path(snakemake.output.summary),
        Path(snakemake.output.samples),
        dataset_reports=list(snakemake.input.datasets),
        judge_output=Path(snakemake.output.judge),
        mcqa_average=None if job.mcqa_average is None else list(job.mcqa_average),
    )


def consistency(snakemake: Any) -> None:
    """Per-prompt variance and CV over sampled answers, every model and benchmark: results/summary/consistency.parquet."""
    from careval.analysis.statistics.consistency import write_consistency

    write_consistency(list(snakemake.input), Path(snakemake.output[0]))


def resilience(snakemake: Any) -> None:
    """Per-sample variance over rephrasings, every model and benchmark: results/summary/resilience.parquet."""
    from careval.analysis.statistics.resilience import write_resilience

    write_resilience(list(snakemake.input), Path(snakemake.output[0]))


def comparisons(snakemake: Any) -> None:
    """Paired comparisons of every pair of models: results/summary/comparisons.parquet."""
    from careval.jobs.comparisons import write_comparisons

    job = job_of(snakemake)
    # <datasets>/<benchmark>.parquet and <results>/generations/<model>/<benchmark>.parquet
    datasets = {Path(p).stem: Path(p) for p in snakemake.input.datasets}
    generations = {(Path(p).parent.name, Path(p).stem): Path(p) for p in snakemake.input.generations}
    repeats = [Path(p) for p in snakemake.input.repeats]
    write_comparisons(Path(snakemake.input.samples), repeats, Path(snakemake.output[0]), job, datasets, generations)


def cost(snakemake: Any) -> None:
    """The cost of every model x benchmark result: results/summary/cost.parquet."""
    from careval.analysis.cost import write_cost

    write_cost(
        Path(snakemake.params.benchmarks_dir),
        Path(snakemake.params.logs_dir),
        job_of(snakemake),
        Path(snakemake.output.cost),
        Path(snakemake.output.cache),
    )


def jury_report(snakemake: Any) -> None:
    """The jury's agreement, bias and stability tables, and every metric's agreement with people's ratings."""
    from careval.jobs.jury_report import OUTPUTS, write_jury_report

    inputs = {key: snakemake.input.get(key) for key in ("samples", "resilience", "consistency", "ratings")}
    inputs["generations"] = list(snakemake.input.generations)
    inputs["datasets"] = list(snakemake.input.datasets)
    write_jury_report(inputs, {key: Path(snakemake.output[key]) for key in OUTPUTS}, job_of(snakemake))


def manifest(snakemake: Any) -> None:
    """The run's provenance: results/manifest.json (careval.manifest)."""
    from careval.manifest import write_manifest

    write_manifest(job_of(snakemake), Path(snakemake.output[0]))


def paper_tables(snakemake: Any) -> None:
    """The paper's Appendix E tables: results/tables/table<N>_<slug>.{csv,md,tex}."""
    from careval.analysis.tables.paper_table_files import write_paper_tables

    write_paper_tables(
        Path(snakemake.input.summary),
        Path(snakemake.input.samples),
        job_of(snakemake),
        Path(snakemake.params.tables_dir),
    )


def figure_index(snakemake: Any) -> None:
    """The report's figures as a table: results/figures/index.tsv (name, kind, caption, category)."""
    from careval.jobs.analysis_report import write_figure_index

    write_figure_index(job_of(snakemake).figures, Path(snakemake.output[0]))


def correlations(snakemake: Any) -> None:
    """Every analysis figure and table: the report's pages (results/report/pages.pdf), results/figures/*.png, results/summary/*.parquet."""
    from careval.jobs.analysis_report import write_analysis_report
    from careval.specs import JURY_REPORT_TABLES

    # the tables by key, and the studies' per-sample tables as a list (write_analysis_report reads study_tables so)
    inputs: dict[str, Any] = {
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


def report(snakemake: Any) -> None:
    """results/correlations.pdf: the run's provenance on the first page, then the report's pages (careval.jobs.analysis_report)."""
    from careval.jobs.analysis_report import write_report

    write_report(Path(snakemake.input.manifest), Path(snakemake.input.pages), Path(snakemake.output[0]))
