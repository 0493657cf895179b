"""The whole analysis step on synthetic score tables: every planned figure is a titled PDF page and a PNG."""
import numpy as np
import polars as pl
import pytest

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.figures import write_analysis_report
from careval.analysis.plan import AnalysisConfigError, AnalysisPlan, analysis_plan
from careval.schemas import SPREAD_SCHEMA, SUMMARY_SAMPLE_SCHEMA, SUMMARY_SCHEMA

MODELS = ["m1", "m2", "m3", "m4"]


def _tables(tmp_path):
    rng = np.random.default_rng(1)
    samples, summary = [], []
    for benchmark, task, metrics in (("mc", "mcqa", ["acc"]), ("qa", "open", ["rouge1", "bleu", "word_perplexity"]),
                                     ("note", "open", ["rouge1", "bleu"])):
        for metric in metrics:
            for i, model in enumerate(MODELS):
                values = rng.random(6) + i if metric != "acc" else (rng.random(6) < 0.25 * (i + 1)).astype(float)
                samples += [{"model": model, "benchmark": benchmark, "task": task, "metric": metric, "id": f"s{j}",
                             "value": float(v), "status": "ok", "weight": 1.0} for j, v in enumerate(values)]
                summary.append({"model": model, "benchmark": benchmark, "task": task, "metric": metric,
                                "value": float(np.exp(np.log(values).mean()) if "perplexity" in metric else values.mean()),
                                "n": 6, "n_failed": 0})
    summary += [{**row, "benchmark": MCQA_AVERAGE} for row in summary if row["benchmark"] == "mc"]
    spread = [{"model": m, "benchmark": "qa", "id": f"s{j}", "metric": metric, "n": 3, "mean": 0.5,
               "variance": 0.01 * j, "scaled_variance": 0.02 * j, "cv": 0.1 * j}
              for m in MODELS for j in range(4) for metric in ("rouge1", "word_perplexity")]
    paths = {"summary": tmp_path / "scores.parquet", "samples": tmp_path / "samples.parquet",
             "resilience": tmp_path / "res.parquet", "consistency": tmp_path / "con.parquet", "elo": tmp_path / "elo.csv"}
    pl.DataFrame(summary, schema=SUMMARY_SCHEMA).write_parquet(paths["summary"])
    pl.DataFrame(samples, schema=SUMMARY_SAMPLE_SCHEMA).write_parquet(paths["samples"])
    pl.DataFrame(spread, schema=SPREAD_SCHEMA).drop("cv").write_parquet(paths["resilience"])
    pl.DataFrame(spread, schema=SPREAD_SCHEMA).write_parquet(paths["consistency"])
    paths["elo"].write_text("model,elo\nm1,1000\nm2,1010\nm3,1100\nm4,1090\n")
    return paths


def test_every_planned_figure_is_written_with_intervals(tmp_path):
    from pypdf import PdfReader

    inputs = _tables(tmp_path)
    plan = AnalysisPlan(["note", "qa"], ["pearson", "spearman"], ["qa"], ["qa"], elo=True)
    outputs = {"pdf": tmp_path / "out.pdf", "figures": tmp_path / "figures", "correlations": tmp_path / "c.parquet",
               "clusters": tmp_path / "k.parquet", "rankings": tmp_path / "r.parquet"}
    settings = {"bootstrap": {"resamples": 50, "seed": 3, "confidence": 0.95}, "resilience": {"k": 3}, "consistency": {"r": 3}}
    write_analysis_report(inputs, outputs, plan, settings)
    assert sorted(p.stem for p in outputs["figures"].glob("*.png")) == sorted(plan.figure_names())
    assert len(PdfReader(outputs["pdf"]).pages) == len(plan.figure_names())
    table = pl.read_parquet(outputs["correlations"])
    assert set(table["analysis"]) == {"mcqa_vs_open", "metric_x_metric", "benchmark_x_benchmark", "mcqa_vs_elo"}
    defined = table.filter(pl.col("r").is_not_nan() & (pl.col("x") != pl.col("y")))
    assert defined.height and defined["ci_low"].is_not_nan().all()
    assert (defined["ci_low"] <= defined["ci_high"]).all()
    clusters = pl.read_parquet(outputs["clusters"])
    assert set(clusters["benchmark"]) == {"note", "qa"}
    assert pl.read_parquet(outputs["rankings"])["rank"].max() == 4


def test_plan_rejects_a_rephraser_that_is_not_a_model():
    config = {"models": {"a": {}}, "analysis": {"resilience": {"rephraser": "qwen-72b"}}}
    with pytest.raises(AnalysisConfigError, match="analysis.resilience.rephraser: 'qwen-72b' is not a key of `models`"):
        analysis_plan(config, ["qa"])
    config["analysis"] = {"consistency": {"r": 3, "benchmarks": ["mc"]}}
    with pytest.raises(AnalysisConfigError, match="analysis.consistency.benchmarks: mc is not an open-ended benchmark"):
        analysis_plan(config, ["qa"])
