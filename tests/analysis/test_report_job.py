"""The correlations job's one spec (AnalysisPlan.report_job): its figures are the plan's one list, the rule declares
exactly them and report_pages draws exactly them; its identity is the settings the job reads, written any way."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

import careval.analysis.figures.report as figures
from careval.analysis.plan import FIGURE_KINDS, SET_FAMILIES, analysis_plan
from careval.plan import build_plan

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def _analysis(**changes) -> dict:
    analysis = {
        "methods": ["pearson", "spearman"],
        "bootstrap": {"resamples": 100, "confidence": 0.9, "seed": 7},
        "model_sets": {"small": ["a", "b"], "large": ["b", "c"]},
        "figure_sets": {family: ["small", "all"] for family in SET_FAMILIES},
        "cluster_min_correlation": 0.5,
        "elo_csv": "elo.csv",
        "relaxed_perplexity_anchor": "qa",
        "resilience": {"rephraser": "a", "k": 4, "limit": 10, "sampling": {"temperature": 0.7}},
        "consistency": {"r": 5, "limit": 3},
    }
    analysis.update(changes)
    return analysis


def _job(analysis: dict):
    config = {"models": {"a": {}, "b": {}, "c": {}}, "analysis": analysis}
    return analysis_plan(config, ["note", "qa"]).report_job


def _reordered(value):
    """The same settings with every mapping's keys in reverse order."""
    if isinstance(value, dict):
        return {key: _reordered(value[key]) for key in reversed(list(value))}
    return value


def test_report_job_identity_is_the_settings_it_reads():
    job = _job(_analysis())
    assert repr(_job(_reordered(_analysis()))) == repr(job)
    # YAML's 1 and 1.0 are one setting
    assert repr(_job(_analysis(cluster_min_correlation=1))) == repr(_job(_analysis(cluster_min_correlation=1.0)))
    assert repr(_job(_analysis(cluster_min_correlation=0.8))) != repr(job)
    assert repr(_job(_analysis(bootstrap={"resamples": 100, "confidence": 0.9, "seed": 8}))) != repr(job)
    # what the job does not read replans nothing: the rephrasing run's settings, unused model sets
    unread = _analysis()
    unread["resilience"] = {**unread["resilience"], "limit": 2, "rephraser": "b", "sampling": {"temperature": 1.0}}
    unread["consistency"] = {**unread["consistency"], "limit": 7}
    unread["model_sets"] = {**unread["model_sets"], "unused": ["c"]}
    assert repr(_job(unread)) == repr(job)
    assert repr(_job(_analysis(elo_csv="elsewhere/elo.csv"))) == repr(job)  # the file is the job's input
    # a setting it reads only where it is used: the threshold where a cluster count cuts instead
    assert repr(_job(_analysis(clusters=3, cluster_min_correlation=0.9))) == repr(_job(_analysis(clusters=3)))
    assert job.bootstrap.seed == 7 and job.resilience_k == 4 and job.consistency_r == 5
    assert set(job.model_sets) == {"small", "all"}


def test_the_report_job_holds_no_default_of_its_own():
    """Every setting comes from the schema's defaults, filled in by the plan."""
    job = _job({})
    assert job.cluster_min_correlation == 0.7 and job.clusters is None
    assert (job.bootstrap.resamples, job.bootstrap.confidence, job.bootstrap.seed) == (1000, 0.95, 1234)
    assert job.resilience_k is None and job.consistency_r is None  # neither analysis is on
    assert _job({"bootstrap": {"resamples": 0}}).bootstrap is None


def test_every_figure_kind_has_a_caption_and_a_drawing():
    report = Path(__file__).parents[2] / "workflow" / "report"
    assert set(figures.DRAW) == set(FIGURE_KINDS)
    for caption, category in FIGURE_KINDS.values():
        assert (report / caption).is_file() and category


def test_report_pages_draw_exactly_the_plans_figures(monkeypatch):
    job = _job(_analysis())
    drawn = []
    for kind in figures.DRAW:
        monkeypatch.setitem(figures.DRAW, kind, lambda tables, job, figure: drawn.append(figure) or figure.name)
    pages = figures.report_pages(object(), job)
    assert pages == [(figure.name, figure.name) for figure in job.figures]
    assert drawn == list(job.figures)


def _dry_run_figures(repo: Path, tmp: Path) -> list[str]:
    """The PNGs the correlations rule declares for the demo config (a dry-run in a fresh working directory)."""
    work = tmp / "careval"
    work.mkdir()
    shutil.copy(repo / "Snakefile", work / "Snakefile")
    shutil.copytree(repo / "workflow", work / "workflow")
    (work / "config").mkdir()
    (work / "config" / "config.yaml").write_text((repo / "config" / "config.yaml").read_text())
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(
        [SNAKEMAKE, "-n", "--cores", "1", "results/correlations.pdf"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rule = result.stdout.split("rule correlations:", 1)[1]
    outputs = re.search(r"^\s*output: (.*)$", rule, re.MULTILINE).group(1).split(", ")
    return [Path(path).stem for path in outputs if path.startswith("results/figures/")]


def test_the_rule_declares_the_plans_figures(repo_root, tmp_path):
    plan = build_plan(yaml.safe_load((repo_root / "config" / "config.yaml").read_text())).analysis
    names = [figure.name for figure in plan.figures]
    assert plan.report_job.figures == plan.figures and plan.figure_names() == names
    assert _dry_run_figures(repo_root, tmp_path) == names


def test_the_figure_index_lists_the_plans_figures_in_page_order(tmp_path):
    """results/figures/index.tsv: the report's input, so a new figure (a new output without provenance, which
    Snakemake never checks for changed params) remakes the report."""
    import polars as pl

    from careval.jobs.analysis_report import write_figure_index

    config = {"models": {"a": {}, "b": {}, "c": {}}, "analysis": _analysis()}
    plan = analysis_plan(config, ["note", "qa"])
    write_figure_index(plan.figure_index_job.figures, tmp_path / "index.tsv")
    index = pl.read_csv(tmp_path / "index.tsv", separator="\t")
    assert index.rows() == [(f.name, f.kind, f.caption, f.category) for f in plan.figures]
    assert index["name"].to_list() == plan.figure_names() and index.height > 10
    fewer = analysis_plan({**config, "analysis": _analysis(methods=["pearson"])}, ["note", "qa"])
    assert repr(fewer.figure_index_job) != repr(plan.figure_index_job)
    assert repr(analysis_plan({**config, "analysis": _analysis(cluster_min_correlation=0.6)}, ["note", "qa"])
                .figure_index_job) == repr(plan.figure_index_job)  # fmt: skip
