"""The whole analysis step on synthetic score tables: every planned figure is a titled PDF page and a PNG."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.plan import SET_FAMILIES, AnalysisConfigError, analysis_plan
from careval.jobs.analysis_report import write_analysis_report
from careval.schemas import SPREAD_SCHEMA, SUMMARY_SAMPLE_SCHEMA, SUMMARY_SCHEMA

MODELS = ["m1", "m2", "m3", "m4"]


def _tables(tmp_path):
    rng = np.random.default_rng(1)
    samples, summary = [], []
    for benchmark, task, metrics in (
        ("mc", "mcqa", ["acc"]),
        ("qa", "open", ["rouge1", "bleu", "word_perplexity", "relaxed_perplexity"]),
        ("note", "open", ["rouge1", "bleu"]),
    ):
        for metric in metrics:
            for i, model in enumerate(MODELS):
                values = rng.random(6) + i if metric != "acc" else (rng.random(6) < 0.25 * (i + 1)).astype(float)
                samples += [
                    {
                        "model": model,
                        "benchmark": benchmark,
                        "task": task,
                        "metric": metric,
                        "id": f"s{j}",
                        "value": float(v),
                        "status": "ok",
                        "weight": 1.0,
                    }
                    for j, v in enumerate(values)
                ]
                summary.append(
                    {
                        "model": model,
                        "benchmark": benchmark,
                        "task": task,
                        "metric": metric,
                        "value": float(np.exp(np.log(values).mean()) if "perplexity" in metric else values.mean()),
                        "n": 6,
                        "n_failed": 0,
                    }
                )
    summary += [{**row, "benchmark": MCQA_AVERAGE} for row in summary if row["benchmark"] == "mc"]
    spread = [
        {
            "model": m,
            "benchmark": "qa",
            "id": f"s{j}",
            "metric": metric,
            "n": 3,
            "mean": 0.5,
            "variance": 0.01 * j,
            "scaled_variance": 0.02 * j,
            "cv": 0.1 * j,
        }
        for m in MODELS
        for j in range(4)
        for metric in ("rouge1", "word_perplexity")
    ]
    paths = {
        "summary": tmp_path / "scores.parquet",
        "samples": tmp_path / "samples.parquet",
        "resilience": tmp_path / "res.parquet",
        "consistency": tmp_path / "con.parquet",
        "elo": tmp_path / "elo.csv",
    }
    pl.DataFrame(summary, schema=SUMMARY_SCHEMA).write_parquet(paths["summary"])
    pl.DataFrame(samples, schema=SUMMARY_SAMPLE_SCHEMA).write_parquet(paths["samples"])
    pl.DataFrame(spread, schema=SPREAD_SCHEMA).drop("cv").write_parquet(paths["resilience"])
    pl.DataFrame(spread, schema=SPREAD_SCHEMA).write_parquet(paths["consistency"])
    paths["elo"].write_text("model,elo\nm1,1000\nm2,1010\nm3,1100\nm4,1090\n")
    return paths


def _config(resilience, consistency, sets=None, **analysis):
    """A config whose analysis is over the fixture's tables: open benchmarks note and qa, an Elo file."""
    sets = sets or {"all": tuple(MODELS)}
    return {
        "models": {m: {} for m in MODELS},
        "analysis": {
            "resilience": {"rephraser": "m1" if resilience else None, "k": 3, "benchmarks": resilience},
            "consistency": {"r": 3 if consistency else 0, "benchmarks": consistency},
            "elo_csv": "elo.csv",
            "model_sets": {name: list(members) for name, members in sets.items() if name != "all"},
            "figure_sets": {family: list(sets) for family in SET_FAMILIES},
            "relaxed_perplexity_anchor": "qa",
            **analysis,
        },
    }


def _plan(resilience, consistency, sets=None, **analysis):
    return analysis_plan(_config(resilience, consistency, sets, **analysis), ["note", "qa"])


def _job(resilience, consistency, sets=None, resamples=20, seed=3):
    return _plan(resilience, consistency, sets, bootstrap={"resamples": resamples, "seed": seed}).report_job


def _outputs(tmp_path):
    return {
        "pdf": tmp_path / "out.pdf",
        "figures": tmp_path / "figures",
        "correlations": tmp_path / "c.parquet",
        "clusters": tmp_path / "k.parquet",
        "rankings": tmp_path / "r.parquet",
    }


def test_every_planned_figure_is_written_with_intervals(tmp_path):
    from pypdf import PdfReader

    inputs = _tables(tmp_path)
    plan = _plan(["qa"], ["qa"], bootstrap={"resamples": 50, "seed": 3, "confidence": 0.95})
    outputs = _outputs(tmp_path)
    write_analysis_report(inputs, outputs, plan.report_job)
    assert sorted(p.stem for p in outputs["figures"].glob("*.png")) == sorted(plan.figure_names())
    assert len(PdfReader(outputs["pdf"]).pages) == len(plan.figure_names())
    table = pl.read_parquet(outputs["correlations"])
    assert set(table["analysis"]) == {
        "mcqa_vs_open",
        "metric_x_metric",
        "benchmark_x_benchmark",
        "mcqa_vs_elo",
        "relaxed_perplexity_vs_all",
    }
    defined = table.filter(pl.col("r").is_not_nan() & (pl.col("x") != pl.col("y")))
    assert defined.height and defined["ci_low"].is_not_nan().all()
    assert (defined["ci_low"] <= defined["ci_high"]).all()
    clusters = pl.read_parquet(outputs["clusters"])
    assert set(clusters["benchmark"]) == {"note", "qa"}
    assert pl.read_parquet(outputs["rankings"])["rank"].max() == 4


def test_two_drawing_processes_write_the_same_pngs_and_pages(tmp_path):
    from pypdf import PdfReader

    inputs = _tables(tmp_path)
    plan = _plan(["qa"], ["qa"], bootstrap={"resamples": 20, "seed": 3})
    written = {}
    for workers in (1, 2):
        outputs = _outputs(tmp_path / f"w{workers}")
        outputs["pdf"].parent.mkdir()
        pngs = write_analysis_report(inputs, outputs, plan.report_job, workers)
        written[workers] = {p.name: p.read_bytes() for p in pngs}
        pages = PdfReader(outputs["pdf"]).pages
        written[workers]["pdf text"] = [page.extract_text() for page in pages]
    assert len(written[1]) == len(plan.figure_names()) + 1
    assert written[2] == written[1]


def test_a_failed_png_process_fails_the_report(tmp_path, monkeypatch):
    import careval.analysis.figures.report as figures

    def broken(pages, paths):
        raise OSError("disk full")

    monkeypatch.setattr(figures, "_save_pngs", broken)  # the forked process inherits the patch
    outputs = _outputs(tmp_path)
    with pytest.raises(RuntimeError, match=r"drawing the PNGs in .*figures failed \(exit code 1\)"):
        write_analysis_report(_tables(tmp_path), outputs, _job(["qa"], ["qa"]), 2)


def test_plan_rejects_a_rephraser_that_is_not_a_model():
    config = {"models": {"a": {}}, "analysis": {"resilience": {"rephraser": "qwen-72b"}}}
    with pytest.raises(
        AnalysisConfigError, match=r"analysis.resilience.rephraser: 'qwen-72b' is not a key of `models`"
    ):
        analysis_plan(config, ["qa"])
    config["analysis"] = {"consistency": {"r": 3, "benchmarks": ["mc"]}}
    with pytest.raises(
        AnalysisConfigError, match=r"analysis.consistency.benchmarks: mc is not an open-ended benchmark"
    ):
        analysis_plan(config, ["qa"])


def test_a_figure_over_a_model_set_uses_exactly_its_models(tmp_path):
    from scipy import stats

    inputs = _tables(tmp_path)
    sets = {"trio": ("m1", "m3", "m4"), "all": tuple(MODELS)}
    outputs = _outputs(tmp_path)
    write_analysis_report(inputs, outputs, _job([], [], sets))
    stems = {p.stem for p in outputs["figures"].glob("*.png")}
    assert {
        "mcqa_vs_open_trio",
        "metric_x_metric_trio_qa",
        "benchmark_x_benchmark_trio_pearson",
        "mcqa_vs_elo_trio",
        "rankings_trio_qa",
        "relaxed_perplexity_vs_all_trio",
    } <= stems
    summary = pl.read_parquet(inputs["summary"])
    value = {(m, b, k): v for m, b, k, v in summary.select("model", "benchmark", "metric", "value").iter_rows()}
    table = pl.read_parquet(outputs["correlations"])
    for name, models in sets.items():
        row = table.filter(
            (pl.col("model_set") == name)
            & (pl.col("analysis") == "metric_x_metric")
            & (pl.col("benchmark") == "qa")
            & (pl.col("method") == "pearson")
            & (pl.col("x") == "rouge1")
            & (pl.col("y") == "bleu")
        )
        expected = stats.pearsonr(
            [value[(m, "qa", "rouge1")] for m in models], [value[(m, "qa", "bleu")] for m in models]
        )
        assert row["r"][0] == pytest.approx(expected.statistic) and row["n_models"][0] == len(models)
    elo = table.filter(
        (pl.col("model_set") == "trio")
        & (pl.col("analysis") == "mcqa_vs_elo")
        & (pl.col("x") == MCQA_AVERAGE)
        & (pl.col("y") == "elo")
        & (pl.col("method") == "spearman")
    )
    expected = stats.spearmanr([value[(m, MCQA_AVERAGE, "acc")] for m in sets["trio"]], [1000, 1100, 1090])
    assert elo["r"][0] == pytest.approx(expected.statistic)
    rankings = pl.read_parquet(outputs["rankings"]).filter(pl.col("model_set") == "trio")
    assert set(rankings["model"]) == set(sets["trio"]) and rankings["rank"].max() == 3


def test_plan_checks_model_sets_and_figure_sets():
    config = {
        "models": {"a": {}, "b": {}, "c": {}},
        "analysis": {"model_sets": {"small": ["a", "b"]}, "figure_sets": {"rankings": ["small", "all"]}},
    }
    plan = analysis_plan(config, ["qa"])
    assert plan.model_sets == {"small": ("a", "b"), "all": ("a", "b", "c")}
    assert plan.figure_sets["rankings"] == ("small", "all") and plan.figure_sets["metric_x_metric"] == ("all",)
    assert "rankings_small_qa" in plan.figure_names() and "metric_x_metric_all_qa" in plan.figure_names()
    config["analysis"]["model_sets"]["small"] = ["a", "z"]
    with pytest.raises(
        AnalysisConfigError, match=r"^analysis.model_sets.small: z is not a key of `models` \(have: a, b, c\)$"
    ):
        analysis_plan(config, ["qa"])
    config["analysis"] = {"figure_sets": {"mcqa_vs_open": ["medium"]}}
    with pytest.raises(AnalysisConfigError, match=r"^analysis.figure_sets.mcqa_vs_open: medium is not a model set"):
        analysis_plan(config, ["qa"])


def test_figure_17_needs_a_relaxed_perplexity_benchmark():
    config = {"models": {"a": {}}, "analysis": {"relaxed_perplexity_anchor": "olaph"}}
    with pytest.raises(AnalysisConfigError, match=r"^analysis.relaxed_perplexity_anchor: 'olaph' is not an open-ended"):
        analysis_plan(config, ["qa"])
    config["analysis"]["relaxed_perplexity_anchor"] = "qa"
    assert "relaxed_perplexity_vs_all_all" in analysis_plan(config, ["qa"]).figure_names()


def test_figures_only_draw_tables_computed_before():
    """Issue 17: the bootstrap, correlations, clusters and rankings are computed in report_tables, not in figures."""
    import ast

    import careval.analysis.figures as figures

    imported = {}
    for module in Path(figures.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("careval."):
                imported.setdefault(node.module, set()).update(alias.name for alias in node.names)
    computing = {
        "careval.analysis.statistics.bootstrap",
        "careval.analysis.statistics.clusters",
        "careval.analysis.statistics.rankings",
        "careval.analysis.elo",
    }
    assert not computing & set(imported), imported
    assert imported.get("careval.analysis.statistics.correlations", set()) <= {
        "square"
    }  # a reshape of a computed table
