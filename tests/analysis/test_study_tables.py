"""The studies' tables (careval.analysis.studies.tables) against the reference libraries and brute force: McNemar's exact
test (statsmodels), the exact sign-flip permutation test (every flip enumerated), Holm (statsmodels), Kendall's tau
(scipy), the per-sample variance over rephrasings (numpy), and Table 6's layout."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from careval.analysis.studies.tables import (
    SourceLabel,
    StudiesJob,
    StudySummary,
    StudyTableJob,
    rephrase_variances,
    study_rows,
    study_table,
)
from careval.analysis.tables.table6 import Table6Job, to_latex, to_markdown, write_table6
from careval.schemas import STUDY_SAMPLE_SCHEMA, STUDY_SCHEMA, SUMMARY_SAMPLE_SCHEMA

JOB = StudiesJob(studies=(), resamples=500, permutations=500, exact_limit=12, confidence=0.95, seed=3)


def rows(model: str, variant: str, metric: str, values, benchmark: str = "b", task: str = "open") -> list[tuple]:
    return [(model, benchmark, task, metric, f"s{j:02d}", float(v), "ok", 1.0, variant) for j, v in enumerate(values)]


def frame(records: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(records, schema=list(STUDY_SAMPLE_SCHEMA), orient="row").cast(STUDY_SAMPLE_SCHEMA)


def summary(baselines: dict[str, str], variants=("v1", "v2")) -> StudySummary:
    return StudySummary(name="s", variants=tuple(variants), baselines=baselines, kind="model")


def test_a_binary_metric_is_tested_by_mcnemar_exactly_as_statsmodels():
    rng = np.random.default_rng(0)
    base, v1 = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    table = frame(rows("m", "base", "acc", base, task="mcqa") + rows("m", "v1", "acc", v1, task="mcqa"))
    out = study_rows(table, summary({"m": "base"}, ("v1",)), pl.DataFrame(schema=SUMMARY_SAMPLE_SCHEMA), JOB)
    contingency = [
        [np.sum((v1 == 1) & (base == 1)), np.sum((v1 == 1) & (base == 0))],
        [np.sum((v1 == 0) & (base == 1)), np.sum((v1 == 0) & (base == 0))],
    ]
    row = out.row(0, named=True)
    assert row["test"] == "mcnemar_exact"
    assert row["p_value"] == pytest.approx(mcnemar(contingency, exact=True).pvalue, rel=1e-12)
    assert (row["value"], row["baseline_value"]) == pytest.approx((v1.mean(), base.mean()))
    assert row["diff"] == pytest.approx(v1.mean() - base.mean())
    assert (row["variant"], row["baseline"], row["n"]) == ("v1", "base", 40)


def test_a_continuous_metric_is_the_exact_sign_flip_test_enumerated_by_hand():
    rng = np.random.default_rng(1)
    base = rng.normal(0.3, 0.1, 10)
    v1 = base + rng.normal(0.05, 0.05, 10)
    table = frame(rows("m", "base", "rouge1", base) + rows("m", "v1", "rouge1", v1))
    row = study_rows(table, summary({"m": "base"}, ("v1",)), pl.DataFrame(schema=SUMMARY_SAMPLE_SCHEMA), JOB).row(
        0, named=True
    )
    d = v1 - base
    flips = [abs(np.mean(np.array(signs) * d)) for signs in itertools.product((1, -1), repeat=len(d))]
    expected = np.mean(np.array(flips) >= abs(d.mean()) * (1 - 1e-12))
    assert row["test"] == "permutation_exact" and row["p_value"] == pytest.approx(expected)
    assert row["ci_low"] < row["diff"] < row["ci_high"]


def test_holm_is_within_the_study_and_kendall_ranks_every_model_with_the_others_at_their_own_values():
    rng = np.random.default_rng(2)
    records = []
    means = {"m1": 0.2, "m2": 0.5, "m3": 0.8}
    for model, mean in means.items():
        base = rng.normal(mean, 0.05, 15)
        records += rows(model, "base", "rouge1", base)
        records += rows(model, "v1", "rouge1", base + rng.normal(0.0, 0.02, 15))
        records += rows(model, "v2", "rouge1", 1 - base)  # the ranking reversed
    # a model the study leaves alone, at its own value: between m1 and m2
    main = pl.DataFrame(
        [("other", "b", "open", "rouge1", f"s{j:02d}", 0.35, "ok", 1.0) for j in range(15)],
        schema=list(SUMMARY_SAMPLE_SCHEMA),
        orient="row",
    ).cast(SUMMARY_SAMPLE_SCHEMA)
    out = study_rows(frame(records), summary(dict.fromkeys(means, "base")), main, JOB)
    assert out.columns == list(STUDY_SCHEMA) and out.height == 6
    assert out["p_holm"].to_list() == pytest.approx(list(multipletests(out["p_value"].to_numpy(), method="holm")[1]))
    table = frame(records)

    def value(model: str, variant: str) -> float:
        return table.filter((pl.col("model") == model) & (pl.col("variant") == variant))["value"].mean()

    for variant in ("v1", "v2"):
        for model in means:
            row = out.filter((pl.col("variant") == variant) & (pl.col("model") == model)).row(0, named=True)
            under = [value(m, variant if m == model else "base") for m in means] + [0.35]
            before = [value(m, "base") for m in means] + [0.35]
            assert row["kendall_tau"] == pytest.approx(stats.kendalltau(under, before).statistic)
            assert row["n_ranked"] == 4


def test_the_variance_over_rephrasings_is_numpy_s_averaged_over_the_runs(tmp_path):
    rng = np.random.default_rng(3)
    paths, labels, expected = [], [], {}
    for run in range(3):
        values = rng.random((4, 3))  # 4 samples x 3 rephrasings
        frame_ = pl.DataFrame(
            [(f"s{i}", k, "rouge1", float(values[i, k]), "ok") for i in range(4) for k in range(3)],
            schema=["id", "repeat", "metric", "value", "status"],
            orient="row",
        )
        path = tmp_path / f"run{run}.parquet"
        frame_.write_parquet(path)
        paths.append(path)
        labels.append(SourceLabel("v", "m", "b", "open", "rephrase_scores", run))
        for i in range(4):
            expected.setdefault(f"s{i}", []).append(np.var(values[i]))
    table = study_table(StudyTableJob(study="s", kind="analysis", sources=tuple(labels)), paths)
    assert set(table["metric"]) == {"rouge1_rephrase_variance"}
    got = dict(zip(table["id"], table["value"]))
    assert got == pytest.approx({key: float(np.mean(v)) for key, v in expected.items()})
    # a sample none of whose runs has two valued rephrasings has no variance: counted, not a zero
    single = pl.DataFrame(
        [("s0", 0, "rouge1", 0.5, "ok")], schema=["id", "repeat", "metric", "value", "status"], orient="row"
    )
    assert rephrase_variances([single.with_columns(pl.col("repeat").cast(pl.Int64))])["variance"].to_list() == [None]


def test_table6_has_the_paper_s_rows_and_bracketed_pairs(tmp_path):
    def targets(values: dict[tuple[int, str], list[float]]) -> pl.DataFrame:
        out = []
        for (example, target_set), ces in values.items():
            for index, ce in enumerate(ces):
                out.append(
                    {
                        "id": f"q{example}",
                        "target_set": target_set,
                        "target_index": index,
                        "target": f"{target_set} statement {index}",
                        "relaxed_cross_entropy": ce,
                        "relaxed_perplexity": math.exp(ce / 10),
                        "status": "ok",
                        "example": example,
                        "benchmark": ["medtext", "olaph"][example],
                        "question": f"Question {example}?",
                    }
                )
        return pl.DataFrame(out)

    general = targets(
        {
            (0, "must_have"): [2.0, 2.11],
            (0, "nice_to_have"): [8.229],
            (1, "must_have"): [12.825],
            (1, "nice_to_have"): [15.7796],
        }
    )
    medical = targets(
        {
            (0, "must_have"): [2.639],
            (0, "nice_to_have"): [4.142],
            (1, "must_have"): [11.208],
            (1, "nice_to_have"): [16.58],
        }
    )
    paths = []
    for name, frame_ in (("general", general), ("medical", medical)):
        paths.append(str(tmp_path / f"{name}.parquet"))
        frame_.write_parquet(paths[-1])
    outputs = {ext: tmp_path / f"table6.{ext}" for ext in ("csv", "md", "tex")}
    table = write_table6(Table6Job(labels=("Mistral-7B", "JSL-MedLlama-3-8B")), paths, outputs)
    assert table["question"].to_list() == ["Question 0?", "Question 1?"]
    assert table["benchmark"].to_list() == ["medtext", "olaph"]
    assert table["must_have"][0] == "must_have statement 0; must_have statement 1"
    assert table["Mistral-7B/must_have"].to_list() == pytest.approx([2.055, 12.825])  # the mean over a set's statements
    md = outputs["md"].read_text()
    assert (
        "| Question 0? | must_have statement 0; must_have statement 1 | nice_to_have statement 0 | medtext | [2.055, 8.229] | [2.639, 4.142] |"
        in md
    )
    assert "Relaxed-CrossEntropy<br>Mistral-7B" in md and md == to_markdown(table, ("Mistral-7B", "JSL-MedLlama-3-8B"))
    tex = outputs["tex"].read_text()
    assert r"\multicolumn{2}{c}{Relaxed-CrossEntropy}" in tex and "[12.825, 15.780]" in tex
    assert tex == to_latex(table, ("Mistral-7B", "JSL-MedLlama-3-8B"))
    assert pl.read_csv(outputs["csv"]).columns == table.columns
