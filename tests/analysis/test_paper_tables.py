"""Appendix E tables (issue 26 item 1) and the paper's metric view (item 2): planning, values, intervals, files."""

from pathlib import Path

import matplotlib
import numpy as np
import polars as pl
import pytest
import yaml
from scipy import stats

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.metric_view import in_view, paper_clusters, without_anchor_extra
from careval.analysis.statistics.bootstrap import resample_model_scores
from careval.analysis.tables.paper_table_files import build_table, to_latex, to_markdown, write_paper_tables
from careval.analysis.tables.paper_tables import PAPER_TABLES, PAPER_TASKS, PaperTablesJob, TableSpec, planned_tables
from careval.datasets.registry import REGISTRY
from careval.metrics.registry import metric_spec, paper_metrics
from careval.plan import build_plan
from careval.schemas import SUMMARY_SAMPLE_SCHEMA, SUMMARY_SCHEMA
from careval.specs import Bootstrap

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]


def test_every_catalogue_entry_names_a_paper_task_and_table_1_is_covered():
    assert all(entry.paper_task in PAPER_TASKS for entry in REGISTRY.values()), [
        (e.name, e.paper_task) for e in REGISTRY.values() if e.paper_task not in PAPER_TASKS
    ]
    # every task of Table 1 has a benchmark, and the tables are 7..20 once each
    assert {entry.paper_task for entry in REGISTRY.values()} == set(PAPER_TASKS)
    assert [t.number for t in PAPER_TABLES] == list(range(7, 22))  # 21: careval's, of no paper task


def test_the_paper_config_plans_tables_7_to_20_and_the_demo_the_tables_it_fills():
    paper = build_plan(yaml.safe_load((ROOT / "config/paper.yaml").read_text()))
    assert [t.number for t in paper.analysis.paper_tables] == list(range(7, 21))
    by_number = {t.number: t for t in paper.analysis.paper_tables}
    assert by_number[16].benchmarks == ("careqa_open",)
    assert "careqa_open" not in by_number[17].benchmarks and "mediqa2019" in by_number[17].benchmarks
    assert by_number[10].benchmarks == ("olaph",)  # the paper's Relaxed Perplexity table: OLAPH only
    demo = build_plan(yaml.safe_load((ROOT / "config/config.yaml").read_text()))
    # demo_open_qa (open questions; judged), demo_note (note-taking; not judged), demo_mcqa (close-ended)
    assert [t.number for t in demo.analysis.paper_tables] == [7, 8, 11, 13, 17, 20]
    # each planned table is a page of the report, after the figures
    assert [f.name for f in demo.analysis.figures if f.kind == "paper_table"] == [
        t.name for t in demo.analysis.paper_tables
    ]


def test_a_table_is_planned_only_where_a_benchmark_has_a_family_of_its_kind():
    benchmarks = {"a": ("open", "medical_factuality"), "b": ("mcqa", "multiple_choice_questions")}
    tables = planned_tables(benchmarks, lambda name: ["rouge", "perplexity"] if name == "a" else ["accuracy"])
    assert [t.number for t in tables] == [8, 15, 20]  # no judge, no Relaxed Perplexity: no 10, no 12


def test_paper_metrics_are_the_eleven_of_section_2_2():
    assert paper_metrics("helpfulness") == (
        "rouge1", "rouge2", "rougeL", "bleu", "bertscore_f1", "bleurt", "moverscore",
        "word_perplexity", "byte_perplexity", "bits_per_byte", "judge_helpfulness",
    )  # fmt: skip
    assert len(paper_metrics(None)) == 10
    assert not metric_spec("word_perplexity_given_question").paper


MODELS = ["m1", "m2", "m3"]


def _frames(seed=0, n=8):
    """Per-sample rows of one open benchmark (rouge1, word_perplexity with word weights, a failure) and an MCQA one."""
    rng = np.random.default_rng(seed)
    samples, summary = [], []
    for benchmark, task, metric in (
        ("qa", "open", "rouge1"),
        ("qa", "open", "word_perplexity"),
        ("qa", "open", "sacrebleu"),
        ("mc", "mcqa", "acc"),
    ):
        for i, model in enumerate(MODELS):
            values = rng.random(n) + i if metric != "acc" else (rng.random(n) < 0.3 * (i + 1)).astype(float)
            values = values + 1.0 if metric == "word_perplexity" else values
            weights = rng.integers(1, 20, n).astype(float) if metric == "word_perplexity" else np.ones(n)
            status = ["ok"] * n
            if metric == "rouge1" and model == "m2":
                status[0] = "empty_output"  # a failed sample: NaN, counted apart
            samples += [
                {
                    "model": model,
                    "benchmark": benchmark,
                    "task": task,
                    "metric": metric,
                    "id": f"s{j}",
                    "value": float("nan") if s != "ok" else float(v),
                    "status": s,
                    "weight": float(w),
                }
                for j, (v, w, s) in enumerate(zip(values, weights, status))
            ]
            ok = np.array([s == "ok" for s in status])
            v, w = values[ok], weights[ok]
            value = np.exp((np.log(v) * w).sum() / w.sum()) if metric == "word_perplexity" else v.mean()
            summary.append(
                {
                    "model": model,
                    "benchmark": benchmark,
                    "task": task,
                    "metric": metric,
                    "value": float(value),
                    "n": int(ok.sum()),
                    "n_failed": int((~ok).sum()),
                }
            )
    summary += [{**row, "benchmark": MCQA_AVERAGE} for row in summary if row["benchmark"] == "mc"]
    return pl.DataFrame(summary, schema=SUMMARY_SCHEMA), pl.DataFrame(samples, schema=SUMMARY_SAMPLE_SCHEMA)


def _spec(number, kind, benchmarks, tasks):
    table = next(t for t in PAPER_TABLES if t.number == number)
    return TableSpec(table.name, number, table.caption, kind, benchmarks, tasks)


def test_table_values_n_and_intervals_against_scipy_and_by_hand():
    summary, samples = _frames()
    B, seed = 300, 11
    open_only = samples.filter(pl.col("benchmark") == "qa")  # one benchmark: its resample indices are scipy's
    resampled = resample_model_scores(open_only, B, seed)
    spec = _spec(17, "results", ("qa",), {"qa": "open"})
    table = build_table(summary, spec, ("helpfulness",), resampled, 0.95).to_dicts()
    # columns: the paper's ROUGE1 only (sacreBLEU is not one of the eleven), then n / n_failed
    assert list(table[0]) == ["model", "qa/rouge1", "qa/rouge1/ci_low", "qa/rouge1/ci_high", "qa/n", "qa/n_failed"]
    for row in table:
        model = row["model"]
        ok = samples.filter((pl.col("model") == model) & (pl.col("metric") == "rouge1") & (pl.col("status") == "ok"))
        assert row["qa/rouge1"] == pytest.approx(ok["value"].mean())
        assert (row["qa/n"], row["qa/n_failed"]) == ((7, 1) if model == "m2" else (8, 0))
        if model != "m2":  # scipy resamples the values alone; with a failure the positions differ
            values = ok.sort("id")["value"].to_numpy()
            ci = stats.bootstrap(
                (values,), np.mean, n_resamples=B, method="percentile", rng=np.random.default_rng(seed)
            ).confidence_interval
            assert (row["qa/rouge1/ci_low"], row["qa/rouge1/ci_high"]) == pytest.approx((ci.low, ci.high))
    # perplexity: the word-weighted geometric mean on each resample, by hand with the same indices
    spec7 = _spec(7, "perplexity", ("qa",), {"qa": "open"})
    row = build_table(summary, spec7, (), resampled, 0.95).filter(pl.col("model") == "m3").to_dicts()[0]
    rows = samples.filter((pl.col("model") == "m3") & (pl.col("metric") == "word_perplexity")).sort("id")
    v, w = rows["value"].to_numpy(), rows["weight"].to_numpy()
    index = np.random.default_rng(seed).integers(0, len(v), (B, len(v)))
    by_hand = [np.exp((np.log(v[i]) * w[i]).sum() / w[i].sum()) for i in index]
    assert (row["qa/word_perplexity/ci_low"], row["qa/word_perplexity/ci_high"]) == pytest.approx(
        tuple(np.quantile(by_hand, [0.025, 0.975]))
    )
    assert row["qa/word_perplexity"] == pytest.approx(np.exp((np.log(v) * w).sum() / w.sum()))


def test_table_20_leads_with_the_mcqa_average_and_the_files_are_written(tmp_path):
    summary, samples = _frames()
    summary.write_parquet(tmp_path / "scores.parquet")
    samples.write_parquet(tmp_path / "samples.parquet")
    tables = (
        _spec(20, "close_ended", ("mc",), {"mc": "mcqa"}),
        _spec(17, "results", ("qa",), {"qa": "open"}),
    )
    job = PaperTablesJob(
        tables=tables, rubrics=(), bootstrap=Bootstrap(resamples=50, confidence=0.95, seed=1), mcqa_average=None
    )
    written = write_paper_tables(tmp_path / "scores.parquet", tmp_path / "samples.parquet", job, tmp_path / "t")
    assert sorted(p.name for p in written) == sorted(f"{t.name}.{ext}" for t in tables for ext in ("csv", "md", "tex"))
    csv = pl.read_csv(tmp_path / "t" / f"{tables[0].name}.csv")
    assert csv.columns[1] == f"{MCQA_AVERAGE}/acc" and "mc/acc" in csv.columns
    expected = summary.filter((pl.col("benchmark") == "mc") & (pl.col("metric") == "acc")).sort("model")
    assert csv["mc/acc"].to_list() == pytest.approx(expected["value"].to_list())
    md = (tmp_path / "t" / f"{tables[1].name}.md").read_text()
    m1 = summary.filter((pl.col("model") == "m1") & (pl.col("metric") == "rouge1"))["value"][0]
    assert md.startswith("**Table 17: Open-ended medical questions results.**")
    assert f"| m1 | {m1:.3f} [" in md and "| 7 (1) |" in md
    tex = (tmp_path / "t" / f"{tables[1].name}.tex").read_text()
    for piece in (r"\toprule", r"\midrule", r"\bottomrule", r"\cmidrule(lr){2-3}", r"\multicolumn{2}{c}{qa}"):
        assert piece in tex
    assert tex.count(r" \\" + "\n") == 2 + len(MODELS)  # two header rows, one per model


def test_markdown_and_latex_say_n_a_for_a_missing_value():
    summary, _ = _frames()
    spec = _spec(17, "results", ("qa",), {"qa": "open"})
    table = build_table(summary.filter(pl.col("model") != "m1").vstack(
        pl.DataFrame([{"model": "m1", "benchmark": "qa", "task": "open", "metric": "rouge1", "value": None,
                       "n": 0, "n_failed": 8}], schema=SUMMARY_SCHEMA)), spec, ())  # fmt: skip
    assert "| m1 | n/a | 0 (8) |" in to_markdown(table, "T", "")
    assert "m1 & n/a & 0 (8)" in to_latex(table, "T", "t", "")


def test_the_paper_view_keeps_close_ended_rows_the_eleven_and_figure_17s_anchor():
    summary, _ = _frames()
    extra = pl.DataFrame(
        [
            {"model": m, "benchmark": b, "task": "open", "metric": "relaxed_perplexity", "value": 2.0, "n": 1,
             "n_failed": 0}
            for m in MODELS
            for b in ("qa", "other")
        ],
        schema=SUMMARY_SCHEMA,
    )  # fmt: skip
    table = pl.concat([summary, extra])
    view = paper_metrics("helpfulness")
    kept = set(in_view(table, view, anchor="qa").select("benchmark", "metric").unique().iter_rows())
    assert kept == {
        ("qa", "rouge1"), ("qa", "word_perplexity"), ("qa", "relaxed_perplexity"), ("mc", "acc"), (MCQA_AVERAGE, "acc"),
    }  # fmt: skip
    assert in_view(table, None).height == table.height  # view `all`
    correlations = pl.DataFrame(
        {
            "analysis": ["metric_x_metric", "metric_x_metric", "relaxed_perplexity_vs_all", "mcqa_vs_open"],
            "benchmark": ["qa", "qa", "qa", "qa"],
            "metric": [None, None, None, "relaxed_perplexity"],
            "x": ["rouge1", "relaxed_perplexity", "qa_relaxed_perplexity", "mcqa_acc"],
            "y": ["bleu", "rouge1", "rouge1", "relaxed_perplexity"],
        }
    )
    left = without_anchor_extra(correlations, view, "qa")
    assert left["analysis"].to_list() == ["metric_x_metric", "relaxed_perplexity_vs_all"]
    assert paper_clusters(list(view)) == [
        ("perplexity", ["word_perplexity", "byte_perplexity", "bits_per_byte"]),
        ("n-gram + semantic", ["rouge1", "rouge2", "rougeL", "bleu", "bertscore_f1", "bleurt", "moverscore"]),
        ("llm-judge", ["judge_helpfulness"]),
    ]


@pytest.mark.parametrize("n", [11, 22, 30])
def test_heatmap_cell_text_stays_inside_its_cell(n):
    """Legibility: every cell's text, as rendered, fits its cell, at a font of at least 5 pt (or no text at all)."""
    import matplotlib.pyplot as plt

    from careval.analysis.figures.heatmaps import MIN_FONT, heatmap, matrix_inches

    rng = np.random.default_rng(n)
    r = rng.uniform(-1, 1, (n, n))
    side = matrix_inches(n)
    fig, ax = plt.subplots(figsize=(side + 2, side + 1.5))
    heatmap(ax, r, [f"m{i}" for i in range(n)], [f"m{i}" for i in range(n)], "t", r - 0.5, r + 0.5, np.abs(r) / 3)
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    cell_w = ax.get_window_extent(renderer).width / n
    cell_h = ax.get_window_extent(renderer).height / n
    texts = list(ax.texts)
    assert texts, "no cell text drawn"
    for text in texts:
        box = text.get_window_extent(renderer)
        assert text.get_fontsize() >= MIN_FONT
        assert box.width <= cell_w and box.height <= cell_h, (text.get_text(), box, cell_w, cell_h)
    plt.close(fig)


def _spread():
    from careval.schemas import SPREAD_SCHEMA

    rows = [
        # model, id, variance, scaled (C.1 reading), scaled by the value range
        ("A", "p1", 0.04, 0.5, 0.1),
        ("A", "p2", 0.00, 0.0, 0.0),
        ("B", "p1", 0.08, 1.0, 0.2),
        ("B", "p2", 0.02, 0.25, 0.05),
    ]
    return pl.DataFrame(
        [
            {"model": m, "benchmark": "b", "id": i, "metric": "rouge1", "n": 3, "mean": 0.5, "variance": v,
             "scaled_variance": s, "scaled_variance_value_range": s2, "cv": 0.1}
            for m, i, v, s, s2 in rows
        ],
        schema=SPREAD_SCHEMA,
    )  # fmt: skip


def test_figure_2_draws_the_variance_per_prompt_scaled_as_figure_13s_averaged_across_models(monkeypatch):
    import careval.analysis.figures.paper as figures

    drawn = []
    monkeypatch.setattr(figures, "_distributions", lambda ax, frame, column, *a: drawn.append((frame, column)))
    figures.consistency_figure(_spread(), "b", 3, cv=False)
    frame, column = drawn[0]
    # C.2: "We compute variances per prompt, and then average across models"; scaled as C.1 scales figure 13's,
    # so metrics of different units share the axis (issue 36)
    assert column == "scaled_variance"
    got = dict(frame.select("id", "scaled_variance").iter_rows())
    assert got == pytest.approx({"p1": (0.5 + 1.0) / 2, "p2": (0.0 + 0.25) / 2})


@pytest.mark.parametrize(
    ("scaling", "column"), [("variance_range", "scaled_variance"), ("value_range", "scaled_variance_value_range")]
)
def test_figures_13_to_15_draw_the_configured_scaling(monkeypatch, scaling, column):
    import careval.analysis.figures.paper as figures

    drawn = []
    monkeypatch.setattr(figures, "_distributions", lambda ax, frame, col, *a: drawn.append((frame, col)))
    figures.resilience_figure(_spread(), "b", 6, scaling)
    assert {col for _, col in drawn} == {column}
    across = dict(drawn[0][0].select("id", column).iter_rows())  # figure 13: the mean over models
    expected = (
        {"p1": (0.5 + 1.0) / 2, "p2": (0.0 + 0.25) / 2} if scaling == "variance_range" else {"p1": 0.15, "p2": 0.025}
    )
    assert across == pytest.approx(expected)
