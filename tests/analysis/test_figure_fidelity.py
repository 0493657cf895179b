"""Issue 36 item 5, the paper's figures as the paper lays them out: figures 2 and 13-16 show the metric view's
metrics, each on a scale of its own; figure 18 ranks by OLAPH's Relaxed Perplexity; figure 1 has task rows; figure
7 is planned from the config; careval's additions (benchmarks outside Table 1) are marked wherever a paper page
names them."""

from dataclasses import replace
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
import yaml
from matplotlib.text import Text
from scipy import stats

from careval.analysis.additions import MARK, NOTE, TASK_ROW_NOTE
from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.figures import heatmaps, paper, report as figures
from careval.analysis.figures.careqa import review_figure
from careval.analysis.plan import SET_FAMILIES, analysis_plan
from careval.analysis.statistics.consistency import consistency_table
from careval.analysis.tables.paper_table_files import build_table, to_latex, to_markdown
from careval.analysis.tables.paper_tables import TableSpec
from careval.analysis.tables.report_tables import analysis_tables
from careval.datasets.registry import REGISTRY
from careval.plan import build_plan
from careval.schemas import CAREQA_REVIEW_CORRECTNESS_SCHEMA, REPEAT_SCORE_SCHEMA, SUMMARY_SCHEMA

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]
MODELS = ["m1", "m2", "m3", "m4"]
PROMPTS, REPEATS = 3, 4
RUBRICS = ["helpfulness", "factual_validity"]
# metric -> the range of its per-repeat values: three scales (0-1, 0-100, 1-5) and metrics outside the paper view
SPREAD_METRICS = {
    "rouge1": (0.0, 1.0),
    "rouge2": (0.0, 1.0),  # drawn as rouge1 x 100 + 3: a metric on another scale (_repeat_values)
    "bertscore_precision": (0.0, 1.0),
    "sacrebleu": (0.0, 100.0),
    "word_perplexity_given_question": (5.0, 50.0),
    "judge_helpfulness": (1.0, 5.0),
    "judge_helpfulness_expected": (1.0, 5.0),
    "judge_factual_validity": (1.0, 5.0),
}
PAPER_VIEW = {
    "rouge1",
    "rouge2",
    "judge_helpfulness",
}  # of the above, what the paper's eleven (main rubric: helpfulness) keep


def _texts(fig) -> list[str]:
    """Every text of a figure: titles, tick labels, notes, heatmap cells and table cells."""
    texts = [t.get_text() for t in fig.findobj(Text)]
    texts += [
        cell.get_text().get_text() for ax in fig.axes for table in ax.tables for cell in table.get_celld().values()
    ]
    return [t for t in texts if t]


def _summary_rows(values: dict[tuple[str, str, str], float]) -> pl.DataFrame:
    tasks = {"mc": "mcqa", "xmc": "mcqa", MCQA_AVERAGE: "mcqa"}
    rows = [
        {"model": m, "benchmark": b, "task": tasks.get(b, "open"), "metric": k, "value": v, "n": 5, "n_failed": 0}
        for (m, b, k), v in values.items()
    ]
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA)


def _repeat_values(rng) -> dict[str, np.ndarray]:
    """metric -> (models, prompts, repeats) values, drawn in each metric's range (1-5 grades are integers)."""
    out = {}
    for metric, (low, high) in SPREAD_METRICS.items():
        values = rng.uniform(low, high, (len(MODELS), PROMPTS, REPEATS))
        out[metric] = np.round(values) if metric.startswith("judge_") else values
    out["rouge2"] = 100 * out["rouge1"] + 3  # rouge1's values on another scale: the figures must draw them alike
    return out


def _spread_inputs(tmp_path, rng) -> tuple[dict, dict[str, np.ndarray]]:
    """The resilience and self-consistency tables of benchmark qa (careval.analysis.statistics.consistency, the job's code),
    and a summary the report reads beside them."""
    raw = _repeat_values(rng)
    files = []
    for i, model in enumerate(MODELS):
        rows = [
            {"id": f"p{p}", "repeat": r, "metric": metric, "value": float(values[i, p, r]), "status": "ok"}
            for metric, values in raw.items()
            for p in range(PROMPTS)
            for r in range(REPEATS)
        ]
        path = tmp_path / f"{model}.parquet"
        pl.DataFrame(rows, schema=REPEAT_SCORE_SCHEMA).write_parquet(path)
        files.append((model, "qa", path))
    spread = consistency_table(files)
    inputs = {"summary": tmp_path / "scores.parquet", "resilience": tmp_path / "r.parquet"}
    inputs["consistency"] = tmp_path / "c.parquet"
    spread.drop("cv").write_parquet(inputs["resilience"])
    spread.write_parquet(inputs["consistency"])
    values = {(m, "mc", "acc"): 0.2 * i for i, m in enumerate(MODELS)}
    values |= {(m, MCQA_AVERAGE, "acc"): 0.2 * i for i, m in enumerate(MODELS)}
    values |= {(m, "qa", "rouge1"): 0.1 * i for i, m in enumerate(MODELS)}
    _summary_rows(values).write_parquet(inputs["summary"])
    return inputs, raw


def _spread_job(view: str):
    config = {
        "models": {m: {} for m in MODELS},
        "metrics": {"judge": {"rubrics": RUBRICS}},
        "analysis": {
            "metric_view": view,
            "bootstrap": {"resamples": 0},
            "resilience": {"rephraser": "m1", "k": REPEATS, "benchmarks": ["qa"]},
            "consistency": {"r": REPEATS, "benchmarks": ["qa"]},
        },
    }
    return analysis_plan(config, ["qa"]).report_job


def _drawn(monkeypatch, tables, job, kind) -> list[tuple[pl.DataFrame, str]]:
    """What the figure of `kind` hands its box plots: (the frame of each panel, the column drawn)."""
    drawn = []
    monkeypatch.setattr(paper, "_distributions", lambda ax, frame, column, *a: drawn.append((frame, column)))
    (figure,) = job.of_kind(kind)
    plt.close(figures.DRAW[kind](tables, job, figure))
    return drawn


def _scaled_by_hand(values: np.ndarray) -> np.ndarray:
    """C.1's scaling by hand: each (model, prompt) variance (ddof 0) over the repeats, divided by the max - min of
    all of them; (models, prompts)."""
    variance = values.var(axis=2)
    return variance / (variance.max() - variance.min())


def test_figures_2_and_13_to_16_draw_the_views_metrics_scaled_out_of_their_units(tmp_path, monkeypatch):
    inputs, raw = _spread_inputs(tmp_path, np.random.default_rng(5))
    job = _spread_job("paper")
    tables = analysis_tables(inputs, job)
    for kind, column in (
        ("consistency", "scaled_variance"),
        ("resilience", "scaled_variance"),
        ("consistency_cv", "cv"),
    ):
        drawn = _drawn(monkeypatch, tables, job, kind)
        assert {col for _, col in drawn} == {column}, kind
        for frame, _ in drawn:  # figure 13's panel across models and figures 14-15's per model
            assert set(frame["metric"]) == PAPER_VIEW, kind
    # figure 2: the per-prompt variance scaled by the max - min of the metric's variances, then averaged over models;
    # a ratio without a unit, so rouge2 (rouge1 x 100 + 3) draws exactly as rouge1, in figure 13 too
    for kind in ("consistency", "resilience"):
        (frame, _), *_ = _drawn(monkeypatch, tables, job, kind)
        drawn = {}
        for metric in PAPER_VIEW:
            got = dict(frame.filter(pl.col("metric") == metric).select("id", "scaled_variance").iter_rows())
            drawn[metric] = [got[f"p{p}"] for p in range(PROMPTS)]
            assert drawn[metric] == pytest.approx(_scaled_by_hand(raw[metric]).mean(axis=0).tolist()), metric
        assert drawn["rouge2"] == pytest.approx(drawn["rouge1"])
    # figure 16: the CV (a ratio without a unit) averaged over models, by hand
    (frame, _), *_ = _drawn(monkeypatch, tables, job, "consistency_cv")
    judge = raw["judge_helpfulness"]
    expected = (judge.std(axis=2) / judge.mean(axis=2)).mean(axis=0)
    got = dict(frame.filter(pl.col("metric") == "judge_helpfulness").select("id", "cv").iter_rows())
    assert [got[f"p{p}"] for p in range(PROMPTS)] == pytest.approx(expected.tolist())
    # view `all`: every metric, still each scaled (sacreBLEU's 0-100 beside 0-1 metrics)
    everything = _spread_job("all")
    frame, column = _drawn(monkeypatch, analysis_tables(inputs, everything), everything, "consistency")[0]
    assert set(frame["metric"]) == set(SPREAD_METRICS) and column == "scaled_variance"


def _ranked_report(tmp_path):
    """A summary where qa (the Relaxed Perplexity anchor) and note both have Relaxed Perplexity."""
    rng = np.random.default_rng(11)
    values = {}
    for i, m in enumerate(MODELS):
        values[(m, "mc", "acc")] = values[(m, MCQA_AVERAGE, "acc")] = 0.2 + 0.1 * i
        for benchmark in ("qa", "note"):
            for metric in ("rouge1", "bleu", "relaxed_perplexity", "relaxed_cross_entropy"):
                values[(m, benchmark, metric)] = float(rng.uniform(1, 20) if "relaxed" in metric else rng.random())
    path = tmp_path / "scores.parquet"
    _summary_rows(values).write_parquet(path)
    config = {
        "models": {m: {} for m in MODELS},
        "analysis": {"bootstrap": {"resamples": 0}, "relaxed_perplexity_anchor": "qa"},
    }
    job = analysis_plan(config, ["qa", "note"]).report_job
    return analysis_tables({"summary": path}, job), job, values


def test_figure_18_ranks_the_anchors_models_by_its_relaxed_perplexity_too(tmp_path):
    tables, job, values = _ranked_report(tmp_path)
    ranked = tables.rankings.filter(pl.col("benchmark") == "qa")
    assert set(ranked["metric"]) == {"rouge1", "bleu", "relaxed_perplexity"}  # the view's, and the anchor's RP
    rp = ranked.filter(pl.col("metric") == "relaxed_perplexity").sort("model")
    lower_first = stats.rankdata([values[(m, "qa", "relaxed_perplexity")] for m in sorted(MODELS)], method="min")
    assert rp["rank"].to_list() == lower_first.astype(int).tolist()
    # another benchmark's Relaxed Perplexity, and the cross-entropy, stay out of the paper view
    assert set(tables.rankings.filter(pl.col("benchmark") == "note")["metric"]) == {"rouge1", "bleu"}
    # the metric x metric matrices and their clusters still leave the anchor's Relaxed Perplexity to figure 17
    matrix = tables.correlations.filter(pl.col("analysis") == "metric_x_metric")
    assert "relaxed_perplexity" not in set(matrix["x"])
    (figure,) = [f for f in job.of_kind("rankings") if f.benchmark == "qa"]
    fig = figures.DRAW["rankings"](tables, job, figure)
    assert "relaxed_perplexity" in [label.get_text() for label in fig.axes[0].get_xticklabels()]
    plt.close(fig)


def test_figure_1_draws_the_task_rows_below_the_benchmarks_and_lists_their_members(tmp_path):
    tables, job, _ = _ranked_report(tmp_path)
    tasks = {"mc": "multiple_choice_questions", "qa": "question_entailment", "note": "question_entailment"}
    job = replace(job, paper_tasks=tasks, additions=("note",))
    tables = analysis_tables({"summary": tmp_path / "scores.parquet"}, job)
    block = tables.correlations.filter(pl.col("analysis") == "mcqa_vs_open")
    assert set(block["benchmark"]) == {"qa", "note", "task:question_entailment"}
    # the paper view: the task row of Relaxed Perplexity (the anchor's, kept for figure 17) leaves figure 1 too
    assert set(block.filter(pl.col("benchmark") == "task:question_entailment")["y"]) == {"rouge1", "bleu"}
    (figure,) = job.of_kind("mcqa_vs_open")
    fig = figures.DRAW["mcqa_vs_open"](tables, job, figure)
    rows = [label.get_text() for label in fig.axes[0].get_yticklabels()]
    # the task row averages the addition into the paper's task: it carries the dagger too, and the note says why
    assert rows == [f"note{MARK}", "qa", f"task: Question entailment{MARK}"]
    texts = " ".join(_texts(fig))
    assert f"Question entailment: note{MARK}, qa." in texts and NOTE in texts and TASK_ROW_NOTE in texts
    plt.close(fig)


def test_figure_7_says_where_the_sheets_go_until_they_are_filled():
    empty = review_figure(pl.DataFrame(schema=CAREQA_REVIEW_CORRECTNESS_SCHEMA), "resources/careqa_review")
    assert any("No filled review sheet in resources/careqa_review yet" in t for t in _texts(empty))
    plt.close(empty)
    table = pl.DataFrame(
        [{"kind": "rephrasing", "category": "medicine", "items": 4, "at_least_one": 1.0, "at_least_two": 0.75,
          "all_reviewers": 0.5}],
        schema=CAREQA_REVIEW_CORRECTNESS_SCHEMA,
    )  # fmt: skip
    drawn = review_figure(table, "resources/careqa_review")
    assert [bar.get_height() for bar in drawn.axes[0].patches] == pytest.approx([100, 75, 50])  # in %
    plt.close(drawn)


# The paper's Table 1, its third column, by task (read off the paper): 9 close-ended and 9 open-ended datasets.
TABLE_1 = {
    "multiple_choice_questions": {"MedMCQA", "PubMedQA", "MedQA", "MMLU", "CareQA-Close"},
    "prescriptions_writing": {"Prescription"},
    "medical_text_classification": {"Medical Text for classification", "Medical Transcriptions"},
    "relation_extraction": {"BioRED"},
    "open_ended_medical_questions": {"MedDialog Raw", "MEDIQA2019", "CareQA-Open"},
    "diagnosis_and_treatment": {"MedText"},
    "clinical_note_taking": {"MTS-Dialog", "ACI-Bench"},
    "medical_factuality": {"OLAPH"},
    "summarization": {"MIMIC-III"},
    "question_entailment": {"Meddialog Qsumm"},
}


def test_the_catalogue_names_each_dataset_of_table_1_under_its_task_and_the_rest_are_additions():
    named: dict[str, set[str]] = {}
    for entry in REGISTRY.values():
        if entry.paper_dataset is not None:
            named.setdefault(entry.paper_task, set()).add(entry.paper_dataset)
    assert named == TABLE_1
    assert {e.name for e in REGISTRY.values() if e.addition} == {
        "demo_mcqa",
        "demo_open_qa",
        "demo_note",
        "headqa",
        "meqsum",
    }
    paper = build_plan(yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())).analysis
    assert paper.report_job.additions == ("meqsum",) and paper.paper_tables_job.additions == ("meqsum",)
    assert paper.report_job.paper_tasks["meqsum"] == "question_entailment"


def test_the_paper_tables_mark_an_addition_in_markdown_latex_and_on_their_page():
    summary = _summary_rows({(m, b, "rougeL"): 0.1 * i for i, m in enumerate(MODELS) for b in ("qsumm", "meqsum")})
    spec = TableSpec("table18_question_entailment", 18, "Question entailment results.", "results",
                     ("qsumm", "meqsum"), {"qsumm": "open", "meqsum": "open"})  # fmt: skip
    table = build_table(summary, spec, ())
    markdown = to_markdown(table, "Table 18", "Cells: value.", ("meqsum",))
    assert f"| meqsum{MARK}<br>ROUGE-L |" in markdown and "| qsumm<br>ROUGE-L |" in markdown
    assert markdown.rstrip().endswith(f"Cells: value. {NOTE}")
    latex = to_latex(table, "Table 18", "t18", "Cells: value.", ("meqsum",))
    assert r"{meqsum$^\dagger$}" in latex and r"$^\dagger$ careval's addition" in latex and MARK not in latex
    assert NOTE not in to_markdown(table, "Table 18", "Cells: value.")  # no addition: no note
    page = figures.table_figure(table, "table18_question_entailment", ("meqsum",))
    texts = _texts(page)
    assert f"meqsum{MARK}\nROUGE-L" in texts and any(NOTE in t for t in texts)
    plt.close(page)


def test_every_paper_page_naming_an_addition_marks_it_and_says_why(tmp_path):
    """xq (open) and xmc (MCQA) are careval's additions: each paper figure that names one (a label, a title) shows
    it with the dagger, never bare, and the note."""
    rng = np.random.default_rng(3)
    values = {}
    for i, m in enumerate(MODELS):
        values[(m, "xmc", "acc")] = values[(m, MCQA_AVERAGE, "acc")] = 0.2 + 0.1 * i
        for benchmark in ("qa", "xq"):
            for metric in ("rougeL", "bleu", "bertscore_f1", "word_perplexity", "relaxed_perplexity"):
                values[(m, benchmark, metric)] = float(rng.uniform(1, 30) if "perplexity" in metric else rng.random())
    inputs, _ = _spread_inputs(tmp_path, rng)
    _summary_rows(values).write_parquet(inputs["summary"])
    (tmp_path / "elo.csv").write_text("model,elo\nm1,1000\nm2,1010\nm3,1100\nm4,1090\n")
    inputs["elo"] = tmp_path / "elo.csv"
    config = {
        "models": {m: {} for m in MODELS},
        "analysis": {
            "bootstrap": {"resamples": 0},
            "relaxed_perplexity_anchor": "xq",
            "elo_csv": "elo.csv",
            "figure_sets": {family: ["all"] for family in SET_FAMILIES},
            "resilience": {"rephraser": "m1", "k": REPEATS, "benchmarks": ["xq"]},
            "consistency": {"r": REPEATS, "benchmarks": ["xq"]},
        },
    }
    plan = analysis_plan(config, ["qa", "xq"])
    tasks = {"qa": "question_entailment", "xq": "question_entailment", "xmc": "multiple_choice_questions"}
    job = replace(plan, paper_tasks=tasks, additions=("xq", "xmc")).report_job
    # the spread tables name benchmark qa: as xq here
    for key in ("resilience", "consistency"):
        pl.read_parquet(inputs[key]).with_columns(benchmark=pl.lit("xq")).write_parquet(inputs[key])
    tables = analysis_tables(inputs, job)
    paper_kinds = {"scores", *SET_FAMILIES, "resilience", "consistency", "consistency_cv"}
    checked = []
    for name, fig in figures.report_pages(tables, job):
        kind = next(f.kind for f in job.figures if f.name == name)
        texts = _texts(fig)
        for addition in ("xq", "xmc"):
            if kind in paper_kinds and any(addition in t for t in texts):
                assert any(f"{addition}{MARK}" in t for t in texts), name
                assert not [t for t in texts if t == addition or t.startswith(f"{addition}\n")], name  # no bare label
                assert any(NOTE in t for t in texts), name
                checked.append(kind)
        plt.close(fig)
    assert set(checked) == paper_kinds


def test_a_grids_cells_keep_their_p_value_on_the_diagonal_a_square_matrix_does_not():
    """Figure 1's grid (benchmarks x metrics) has no diagonal of r = 1: cell (i, i) shows its p-value too."""
    r = np.array([[0.5, -0.2], [0.1, 0.3]])
    p = np.array([[0.04, 0.5], [0.8, 0.2]])
    for rows, cols, diagonal in ((["a", "b"], ["rouge1", "bleu"], "p=0.04"), (["a", "b"], ["a", "b"], None)):
        fig, ax = plt.subplots(figsize=(6, 5))
        heatmaps.heatmap(ax, r, rows, cols, "t", r - 0.1, r + 0.1, p)
        first = next(t.get_text() for t in ax.texts if t.get_text().startswith("0.50"))
        assert (first.splitlines()[-1] == diagonal) if diagonal else "p=" not in first
        assert any("p=0.8" in t.get_text() for t in ax.texts)  # off the diagonal: always
        plt.close(fig)
