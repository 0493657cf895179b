"""Every page of the reports of the demo, config/studies.yaml and config/real_samples.yaml can be read: drawn from each
config's plan on the summary tables of a run of it kept as fixture data (tests/fixtures/report_<config>: no model runs
here), each page passes the legibility check (careval.analysis.figures.legibility: every text inside its figure, no
legend over data, no signed zero)."""

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

pytestmark = pytest.mark.slow  # draws the pages of three reports (the demo's 40: a minute on 2 cores)

ROOT = Path(__file__).parents[2]
# config -> its run's summary tables (each folder's README says how they were made)
FIXTURES = {
    "config.yaml": ROOT / "tests" / "fixtures" / "report_demo",
    "studies.yaml": ROOT / "tests" / "fixtures" / "report_studies",
    "real_samples.yaml": ROOT / "tests" / "fixtures" / "report_real_samples",
}
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


def _inputs(plan, fixture: Path) -> dict:
    """The correlations job's inputs (common.smk, analysis_inputs) in the fixture's folder (the tables its run made)."""
    summary = fixture / "summary"
    inputs = {"summary": summary / "scores.parquet", "samples": summary / "sample_scores.parquet"}
    inputs |= {key: summary / f"{key}.parquet" for key in TABLES if (summary / f"{key}.parquet").exists()}
    if plan.config["analysis"]["elo_csv"]:
        inputs["elo"] = ROOT / plan.config["analysis"]["elo_csv"]
    tables = fixture / "tables"
    inputs["careqa_table4"] = tables / "table4_careqa_statistics.csv"
    inputs["careqa_table4_md"] = tables / "table4_careqa_statistics.md"
    inputs["careqa_categories"] = fixture / "careqa" / "categories_per_year.parquet"
    inputs["careqa_review"] = fixture / "careqa" / "review_correctness.parquet"
    inputs["paper_tables"] = tables
    if (summary / "studies.parquet").exists():
        inputs["studies"] = summary / "studies.parquet"
    if (tables / "table6_relaxed_perplexity_examples.csv").exists():
        inputs["table6"] = tables / "table6_relaxed_perplexity_examples.csv"
    tables = (fixture / "studies" / name / "sample_scores.parquet" for name in plan.studies)
    inputs["study_tables"] = [path for path in tables if path.exists()]  # README.md there: one study's
    return inputs


@pytest.mark.parametrize("config", list(FIXTURES))
def test_every_page_of_the_report_reads(config, demo_model_dirs):  # the plan checks the configs' model folders
    plan = load_plan(str(ROOT / "config" / config))
    job = plan.analysis.report_job
    pages = report_pages(analysis_tables(_inputs(plan, FIXTURES[config]), job), job)
    assert [name for name, _ in pages] == [figure.name for figure in job.figures]
    found = {}
    for name, fig in pages:
        problems = legibility_problems(fig)
        if problems:
            found[name] = problems
        plt.close(fig)
    assert found == {}
