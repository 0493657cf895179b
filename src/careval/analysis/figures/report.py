"""The report: every page the plan asks for (AnalysisPlan.figures), each drawn by its kind's drawing (DRAW), into
one PDF (results/report/pages.pdf: the report's pages, after its first) and one PNG per page."""

from __future__ import annotations

import errno
import multiprocessing
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt
import polars as pl
from matplotlib.backends.backend_pdf import PdfPages

from careval.analysis.figures import careqa, comparisons, jury, studies
from careval.analysis.figures.paper import (
    benchmark_matrix_figure,
    consistency_figure,
    elo_figure,
    mcqa_vs_open_figure,
    metric_matrix_figure,
    rankings_figure,
    relaxed_perplexity_figure,
    resilience_figure,
    scores_figure,
)
from careval.analysis.figures.text_pages import text_page
from careval.analysis.plan import FigureSpec, ReportJob
from careval.analysis.tables.paper_table_files import table_figure
from careval.analysis.tables.report_tables import AnalysisTables


def _set_block(tables: AnalysisTables, figure: FigureSpec) -> pl.DataFrame:
    """The correlations of the figure's analysis (its kind) over its model set."""
    return tables.correlations.filter((pl.col("analysis") == figure.kind) & (pl.col("model_set") == figure.model_set))


def _draw_metric_x_metric(tables: AnalysisTables, job: ReportJob, figure: FigureSpec):
    cut = (
        f"cut into at most {job.clusters} clusters"
        if job.clusters
        else f"cut at mean r >= {job.cluster_min_correlation}"
    )
    clusters = tables.clusters.filter(pl.col("model_set") == figure.model_set)
    who = tables.set_labels[figure.model_set]
    return metric_matrix_figure(
        _set_block(tables, figure), clusters, figure.benchmark, list(job.methods), who, cut, job.additions
    )


def _draw_rankings(tables: AnalysisTables, job: ReportJob, figure: FigureSpec):
    ranked = tables.rankings.filter(
        (pl.col("model_set") == figure.model_set) & (pl.col("benchmark") == figure.benchmark)
    ).drop("model_set")
    return rankings_figure(ranked, figure.benchmark, figure.model_set, job.additions)


# figure kind (FigureSpec.kind) -> its drawing: (tables, job, figure) -> a matplotlib figure
DRAW = {
    "run_notes": lambda tables, job, figure: text_page("About this run: what it does not make, and why", job.notes),
    "scores": lambda tables, job, figure: scores_figure(tables.summary, job.additions),
    "mcqa_vs_open": lambda tables, job, figure: mcqa_vs_open_figure(
        _set_block(tables, figure),
        list(job.methods),
        tables.set_labels[figure.model_set],
        job.paper_tasks,
        job.additions,
    ),
    "metric_x_metric": _draw_metric_x_metric,
    "benchmark_x_benchmark": lambda tables, job, figure: benchmark_matrix_figure(
        _set_block(tables, figure), figure.method, tables.set_labels[figure.model_set], job.additions
    ),
    "mcqa_vs_elo": lambda tables, job, figure: elo_figure(
        _set_block(tables, figure), list(job.methods), str(tables.elo_path), figure.model_set, job.additions
    ),
    "rankings": _draw_rankings,
    "relaxed_perplexity_vs_all": lambda tables, job, figure: relaxed_perplexity_figure(
        _set_block(tables, figure),
        list(job.methods),
        tables.set_labels[figure.model_set],
        job.relaxed_perplexity_anchor,
        job.additions,
    ),
    "resilience": lambda tables, job, figure: resilience_figure(
        tables.resilience, figure.benchmark, job.resilience_k, job.resilience_scaling, job.additions
    ),
    "consistency": lambda tables, job, figure: consistency_figure(
        tables.consistency, figure.benchmark, job.consistency_r, cv=False, additions=job.additions
    ),
    "consistency_cv": lambda tables, job, figure: consistency_figure(
        tables.consistency, figure.benchmark, job.consistency_r, cv=True, additions=job.additions
    ),
    "careqa_table4": lambda tables, job, figure: careqa.table4_figure(
        tables.careqa["table4"], tables.careqa["table4_caption"]
    ),
    "careqa_categories": lambda tables, job, figure: careqa.categories_figure(
        tables.careqa["categories"], figure.benchmark
    ),
    "careqa_review": lambda tables, job, figure: careqa.review_figure(tables.careqa["review"], job.review_sheets),
    "paper_table": lambda tables, job, figure: table_figure(
        tables.paper_tables[figure.name], figure.name, job.additions
    ),
    "comparisons": lambda tables, job, figure: comparisons.win_tie_loss_figure(
        _of_set(tables.comparisons, figure),
        job.model_sets[figure.model_set],
        figure.benchmark,
        figure.model_set,
        job.comparison_adjust,
    ),
    "comparison_groups": lambda tables, job, figure: comparisons.groups_figure(
        _of_set(tables.groups, figure),
        _of_set(tables.adjacent, figure),
        figure.benchmark,
        figure.model_set,
        job.comparison_adjust,
    ),
    "adjacent_pairs": lambda tables, job, figure: comparisons.adjacent_figure(
        _of_set(tables.adjacent, figure), figure.model_set, job.comparison_adjust
    ),
    "cost": lambda tables, job, figure: comparisons.cost_figure(
        tables.summary,
        tables.cost,
        job.cost["benchmark"],
        job.cost["metric"],
        job.cost["cost"],
        job.model_sets.get("all") or tuple(tables.summary["model"].unique().sort()),
        tables.request_cache,
    ),
    # a jury of judges and people's ratings (careval.analysis.figures.jury)
    "jury": lambda tables, job, figure: jury.jury_figure(tables.summary, figure.benchmark),
    "judge_agreement": lambda tables, job, figure: jury.judge_agreement_figure(
        tables.jury["judge_agreement"], figure.benchmark
    ),
    "judge_bias": lambda tables, job, figure: jury.judge_bias_figure(tables.jury["judge_bias"], figure.benchmark),
    "jury_stability": lambda tables, job, figure: jury.jury_stability_figure(
        tables.jury["jury_stability"], figure.benchmark
    ),
    "study": lambda tables, job, figure: studies.study_figure(
        tables.studies,
        tables.study_samples.get(figure.study or ""),
        next(page for page in job.studies if page.name == figure.study),
        job.view_metrics,
        job.comparison_alpha or 0.05,
    ),
    "table6": lambda tables, job, figure: studies.table6_figure(tables.table6),
    "human_agreement": lambda tables, job, figure: jury.human_agreement_figure(
        tables.jury["human_agreement"], tables.jury["human_rater_agreement"]
    ),
}


def _of_set(table: pl.DataFrame | None, figure: FigureSpec) -> pl.DataFrame:
    """The rows of a comparison table over the figure's model set (an empty table where none was computed)."""
    if table is None:
        return pl.DataFrame(schema={"model_set": pl.String, "benchmark": pl.String, "metric": pl.String})
    return table.filter(pl.col("model_set") == figure.model_set)


def report_pages(tables: AnalysisTables, job: ReportJob) -> list[tuple[str, object]]:
    """Every page of the report, drawn from tables computed before (careval.analysis.tables.report_tables): exactly the
    job's figures (the plan's, AnalysisPlan.figures), in their order, each by its kind's drawing (DRAW). Every page
    stays open until save_pages has written the PDF and the PNGs (a forked process draws the PNGs from the same
    figures), so pyplot's warning about more than 20 open figures says nothing here."""
    with plt.rc_context({"figure.max_open_warning": 0}):
        return [(figure.name, DRAW[figure.kind](tables, job, figure)) for figure in job.figures]


def save_pages(pages: list[tuple[str, object]], pdf_path: Path, figures_dir: Path, workers: int = 1) -> list[Path]:
    """One PDF page and one PNG per figure. With ``workers`` >= 2 (and fork), a forked copy of this
    process renders the PNGs while this one writes the PDF: drawing is nearly all of the report's time."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    written = [figures_dir / f"{name}.png" for name, _ in pages]
    pngs = None
    try:
        if workers >= 2 and "fork" in multiprocessing.get_all_start_methods():
            pngs = multiprocessing.get_context("fork").Process(target=_png_process, args=(pages, written), daemon=True)
            pngs.start()
        with PdfPages(pdf_path) as pdf:
            for _, fig in pages:
                pdf.savefig(fig)
        if pngs is None:
            _save_pngs(pages, written)
        else:
            pngs.join()
            if pngs.exitcode == errno.ENOSPC:  # _png_process: the cause, not only that it failed
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(figures_dir))
            if pngs.exitcode != 0:
                raise RuntimeError(
                    f"drawing the PNGs in {figures_dir} failed (exit code {pngs.exitcode}); see the log above"
                )
    finally:
        if pngs is not None and pngs.is_alive():  # the PDF failed: stop the PNGs too
            pngs.terminate()
        for _, fig in pages:
            plt.close(fig)
    return written


def _png_process(pages: list[tuple[str, object]], paths: list[Path]) -> None:
    """_save_pngs in the forked process, whose exit code says a full disk (ENOSPC) apart from other failures."""
    try:
        _save_pngs(pages, paths)
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        print(f"drawing the PNGs: {error}", file=sys.stderr)
        sys.exit(errno.ENOSPC)


def _save_pngs(pages: list[tuple[str, object]], paths: list[Path]) -> None:
    for (_, fig), path in zip(pages, paths):
        fig.savefig(path, dpi=110)
