"""Repeated outputs: scoring through the real scorer, variance, the paper's scaling and the CV, by hand."""

import math

import polars as pl
import pytest

from careval.analysis.statistics.consistency import consistency_table, cv_excluded_metrics
from careval.analysis.statistics.resilience import resilience_table
from careval.analysis.statistics.spread import per_sample_spread, score_repeats
from careval.schemas import REPEAT_SCORE_SCHEMA
from careval.scoring import score_text


def _scores(rows):
    return pl.DataFrame(
        [dict(zip(("id", "repeat", "metric", "value", "status"), r)) for r in rows], schema=REPEAT_SCORE_SCHEMA
    )


def test_scaled_variance_by_hand(tmp_path):
    a = _scores(
        [
            ("s1", 0, "rouge1", 0.2, "ok"),
            ("s1", 1, "rouge1", 0.4, "ok"),
            ("s1", 2, "rouge1", 0.6, "ok"),
            ("s2", 0, "rouge1", 0.5, "ok"),
            ("s2", 1, "rouge1", 0.5, "ok"),
            ("s2", 2, "rouge1", float("nan"), "empty_output"),
        ]
    )
    b = _scores(
        [
            ("s1", 0, "rouge1", 0.1, "ok"),
            ("s1", 1, "rouge1", 0.9, "ok"),
            ("s1", 2, "rouge1", 0.5, "ok"),
            ("s2", 0, "rouge1", 0.3, "ok"),
            ("s2", 1, "rouge1", 0.3, "ok"),
            ("s2", 2, "rouge1", 0.6, "ok"),
        ]
    )
    files = []
    for model, frame in (("A", a), ("B", b)):
        frame.write_parquet(tmp_path / f"{model}.parquet")
        files.append((model, "bench", tmp_path / f"{model}.parquet"))
    table = resilience_table(files)
    got = {
        (m, i): v
        for m, i, v in table.filter(pl.col("metric") == "rouge1")
        .select("model", "id", "scaled_variance_value_range")
        .iter_rows()
    }
    interval = 0.9 - 0.1  # observed max - min over both models, all samples and rephrasings
    var_a1 = ((0.2 - 0.4) ** 2 + 0 + (0.6 - 0.4) ** 2) / 3  # population variance (ddof 0)
    var_b1 = ((0.1 - 0.5) ** 2 + (0.9 - 0.5) ** 2 + 0) / 3
    var_b2 = (2 * (0.3 - 0.4) ** 2 + (0.6 - 0.4) ** 2) / 3
    assert got[("A", "s1")] == pytest.approx(var_a1 / interval)
    assert got[("A", "s2")] == 0.0  # the failed rephrasing is left out, not scored 0
    assert got[("B", "s1")] == pytest.approx(var_b1 / interval)
    assert got[("B", "s2")] == pytest.approx(var_b2 / interval)
    assert table.filter((pl.col("model") == "A") & (pl.col("id") == "s2"))["n"][0] == 2
    # the paper's reading of C.1 (the default): divided by max - min of the metric's column of variances
    paper = {
        (m, i): v
        for m, i, v in table.filter(pl.col("metric") == "rouge1").select("model", "id", "scaled_variance").iter_rows()
    }
    variance_range = max(var_a1, 0.0, var_b1, var_b2) - min(var_a1, 0.0, var_b1, var_b2)  # = var_b1 - 0
    assert variance_range == pytest.approx(var_b1)
    assert paper[("A", "s1")] == pytest.approx(var_a1 / variance_range)
    assert paper[("A", "s2")] == 0.0
    assert paper[("B", "s1")] == pytest.approx(1.0)  # the column's largest variance
    assert paper[("B", "s2")] == pytest.approx(var_b2 / variance_range)


def test_cv_by_hand_and_undefined_at_zero_mean():
    spread = per_sample_spread(
        _scores(
            [
                ("p", 0, "bleu", 1.0, "ok"),
                ("p", 1, "bleu", 2.0, "ok"),
                ("p", 2, "bleu", 3.0, "ok"),
                ("q", 0, "bleu", 0.0, "ok"),
                ("q", 1, "bleu", 0.0, "ok"),
            ]
        )
    )
    rows = {r["id"]: r for r in spread.iter_rows(named=True)}
    assert rows["p"]["cv"] == pytest.approx(math.sqrt(((1 - 2) ** 2 + 0 + (3 - 2) ** 2) / 3) / 2)
    assert rows["q"]["cv"] is None and rows["q"]["variance"] == 0.0


def test_cv_leaves_out_bleurt_and_metrics_seen_negative(tmp_path):
    frame = _scores(
        [
            ("p", 0, "bleurt", 0.2, "ok"),
            ("p", 1, "bleurt", 0.4, "ok"),
            ("p", 0, "bertscore_f1", -0.5, "ok"),
            ("p", 1, "bertscore_f1", -0.1, "ok"),
            ("p", 0, "rouge1", 0.2, "ok"),
            ("p", 1, "rouge1", 0.4, "ok"),
        ]
    )
    frame.write_parquet(tmp_path / "m.parquet")
    table = consistency_table([("m", "b", tmp_path / "m.parquet")])
    assert cv_excluded_metrics(table) == ["bertscore_f1", "bleurt"]
    cv = dict(table.select("metric", "cv").iter_rows())
    assert cv["bleurt"] is None and cv["bertscore_f1"] is None and cv["rouge1"] == pytest.approx(0.1 / 0.3)


def test_scoring_repeats_in_one_call_equals_scoring_each_repeat_alone():
    samples = pl.DataFrame(
        {"id": ["s1", "s2"], "reference": ["aspirin relieves pain", "metformin for type 2 diabetes"]}
    )
    repeats = pl.DataFrame(
        {
            "id": ["s1", "s1", "s2", "s2"],
            "repeat": [0, 1, 0, 1],
            "output": ["aspirin helps pain", "pain relief with aspirin", "", "metformin treats diabetes"],
            "status": ["ok", "ok", "empty_output", "ok"],
        }
    )
    got = score_repeats(samples, repeats, ["rouge", "bleu"])
    for repeat in (0, 1):
        single = repeats.filter(pl.col("repeat") == repeat).drop("repeat")
        for family in ("rouge", "bleu"):
            expected = score_text(family, samples, single).filter(pl.col("level") == "sample")
            for sample_id, metric, value, status in expected.select("id", "metric", "value", "status").iter_rows():
                row = got.filter(
                    (pl.col("id") == sample_id) & (pl.col("repeat") == repeat) & (pl.col("metric") == metric)
                )
                assert row["status"][0] == status
                assert (math.isnan(value) and math.isnan(row["value"][0])) or row["value"][0] == pytest.approx(value)
    assert "sacrebleu_corpus" not in set(got["metric"])  # corpus values have no per-sample spread
