"""Every page of the demo's report can be read: drawn from the demo's plan on the summary tables of a demo run kept
as fixture data (tests/fixtures/report_demo: no model runs here), each page passes the legibility check
(careval.analysis.figures.legibility: every text inside its figure, no legend over data, no signed zero)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from careval.analysis.figures.legibility import legibility_problems
from careval.analysis.figures.report import report_pages
from careval.analysis.tables.report_tables import analysis_tables
from careval.plan import load_plan

pytestmark = pytest.mark.slow  # draws the 39 pages of the demo's report (a minute on 2 cores)

ROOT = Path(__file__).parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "report_demo"
TABLES = (
    "resilience",
    "consistency",
    "comparisons",
    "cost",
    "request_cache",
    "judge_agreement",
    "judge_bias",
    "jury_stability",
    "human_rater_agreement",
    "human_agreement",
)


def _inputs(plan) -> dict:
    """The correlations job's inputs (common.smk, analysis_inputs) in the fixture's folder."""
    summary = FIXTURE / "summary"
    inputs = {"summary": summary / "scores.parquet", "samples": summary / "sample_scores.parquet"}
    inputs |= {key: summary / f"{key}.parquet" for key in TABLES}
    inputs["elo"] = ROOT / plan.config["analysis"]["elo_csv"]
    tables = FIXTURE / "tables"
    inputs["careqa_table4"] = tables / "table4_careqa_statistics.csv"
    inputs["careqa_table4_md"] = tables / "table4_careqa_statistics.md"
    inputs["careqa_categories"] = FIXTURE / "careqa" / "categories_per_year.parquet"
    inputs["careqa_review"] = FIXTURE / "careqa" / "review_correctness.parquet"
    inputs["paper_tables"] = tables
    inputs["studies"] = summary / "studies.parquet"
    tables = (FIXTURE / "studies" / name / "sample_scores.parquet" for name in plan.studies)
    inputs["study_tables"] = [path for path in tables if path.exists()]  # README.md there: one study's
    return inputs


def test_every_page_of_the_demo_report_reads():
    plan = load_plan(str(ROOT / "config" / "config.yaml"))
    job = plan.analysis.report_job
    pages = report_pages(analysis_tables(_inputs(plan), job), job)
    assert [name for name, _ in pages] == [figure.name for figure in job.figures]
    found = {}
    for name, fig in pages:
        problems = legibility_problems(fig)
        if problems:
            found[name] = problems
        plt.close(fig)
    assert found == {}
