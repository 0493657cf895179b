"""The analysis report job: the tables (careval.analysis.tables.report_tables) written as parquet, then every figure
drawn from them (careval.analysis.figures.report) into one PDF and one PNG each; then the report, its pages after a
first page that states what made its numbers (the run's manifest)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
from pypdf import PdfReader, PdfWriter

from careval.analysis.figures.report import report_pages, save_pages
from careval.analysis.figures.text_pages import text_page
from careval.analysis.plan import FigureSpec, ReportJob
from careval.analysis.tables.report_tables import analysis_tables
from careval.manifest import essentials


def write_analysis_report(
    inputs: dict[str, Path | None], outputs: dict[str, Path], job: ReportJob, workers: int = 1
) -> list[Path]:
    """inputs: summary, samples, resilience, consistency, elo (see analysis_tables); outputs: pdf, figures (folder),
    correlations, clusters, rankings (parquet); job: the figures and settings (AnalysisPlan.report_job);
    workers: processes drawing the figures. Returns the PNGs written."""
    tables = analysis_tables(inputs, job)
    for key, frame in (
        ("correlations", tables.correlations),
        ("clusters", tables.clusters),
        ("rankings", tables.rankings),
    ):
        outputs[key].parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(outputs[key])
    return save_pages(report_pages(tables, job), outputs["pdf"], Path(outputs["figures"]), workers)


def write_report(manifest: Path, pages: Path, pdf: Path) -> None:
    """The report's PDF: a first page stating what made its numbers (the manifest's essentials; not a figure, no PNG),
    then the drawn pages as they are."""
    front = text_page("What made these numbers (results/manifest.json)", essentials(json.loads(manifest.read_text())))
    drawn = io.BytesIO()
    try:
        front.savefig(drawn, format="pdf")
    finally:
        plt.close(front)
    writer = PdfWriter()
    writer.append(PdfReader(drawn))
    writer.append(PdfReader(pages))
    pdf.parent.mkdir(parents=True, exist_ok=True)
    with pdf.open("wb") as out:
        writer.write(out)


def write_figure_index(figures: tuple[FigureSpec, ...], path: Path) -> None:
    """The report's figures, one row each in page order: name, kind, caption file, report category (a TSV)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        [(f.name, f.kind, f.caption, f.category) for f in figures],
        schema=["name", "kind", "caption", "category"],
        orient="row",
    ).write_csv(path, separator="\t")
