"""The analysis report job: the tables (careval.analysis.report_tables) written as parquet, then every figure
drawn from them (careval.analysis.figures) into one PDF and one PNG each."""

from __future__ import annotations

from pathlib import Path

from careval.analysis.figures import report_pages, save_pages
from careval.analysis.plan import AnalysisPlan
from careval.analysis.report_tables import analysis_tables


def write_analysis_report(
    inputs: dict[str, Path | None], outputs: dict[str, Path], plan: AnalysisPlan, settings: dict, workers: int = 1
) -> list[Path]:
    """inputs: summary, samples, resilience, consistency, elo (see analysis_tables); outputs: pdf, figures (folder),
    correlations, clusters, rankings (parquet); workers: processes drawing the figures. Returns the PNGs written."""
    tables = analysis_tables(inputs, plan, settings)
    for key, frame in (
        ("correlations", tables.correlations),
        ("clusters", tables.clusters),
        ("rankings", tables.rankings),
    ):
        outputs[key].parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(outputs[key])
    return save_pages(report_pages(tables, plan, settings), outputs["pdf"], Path(outputs["figures"]), workers)
