"""Correlations across models, checked against hand formulas."""
import math

import numpy as np
import polars as pl
import pytest

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.correlations import correlate, mcqa_vs_open, metric_matrix
from careval.schemas import SUMMARY_SCHEMA


def _pearson_by_hand(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx, dy = x - x.mean(), y - y.mean()
    return float((dx * dy).sum() / math.sqrt((dx**2).sum() * (dy**2).sum()))


def _ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    for rank, i in enumerate(order, start=1):
        ranks[i] = float(rank)
    return ranks


def test_pearson_and_spearman_match_hand_formulas():
    x, y = [0.2, 0.5, 0.4, 0.9, 0.7], [3.0, 2.5, 4.0, 1.0, 9.0]
    assert correlate(x, y, "pearson")[0] == pytest.approx(_pearson_by_hand(x, y))
    assert correlate(x, y, "spearman")[0] == pytest.approx(_pearson_by_hand(_ranks(x), _ranks(y)))


def test_undefined_correlations_are_nan_not_zero():
    assert math.isnan(correlate([1, 2], [3, 4], "pearson")[0])          # too few models
    assert math.isnan(correlate([1, 1, 1], [3, 4, 5], "spearman")[0])   # constant input
    assert math.isnan(correlate([1, float("nan"), 2], [3, 4, 5], "pearson")[0])  # NaN drops a model


def _summary():
    rows = []
    acc = {"m1": 0.3, "m2": 0.5, "m3": 0.6, "m4": 0.9}
    rouge = {"m1": 0.1, "m2": 0.3, "m3": 0.2, "m4": 0.4}
    ppl = {"m1": 30.0, "m2": 20.0, "m3": 25.0, "m4": 10.0}
    for model in acc:
        rows.append({"model": model, "benchmark": MCQA_AVERAGE, "task": "mcqa", "metric": "acc", "value": acc[model], "n": 10, "n_failed": 0})
        rows.append({"model": model, "benchmark": "qa", "task": "open", "metric": "rouge1", "value": rouge[model], "n": 5, "n_failed": 0})
        rows.append({"model": model, "benchmark": "qa", "task": "open", "metric": "word_perplexity", "value": ppl[model], "n": 5, "n_failed": 0})
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA), acc, rouge, ppl


def test_mcqa_vs_open_uses_the_weighted_average_per_model():
    summary, acc, rouge, ppl = _summary()
    table = mcqa_vs_open(summary, ["pearson"])
    got = {row["y"]: row["r"] for row in table.iter_rows(named=True)}
    models = sorted(acc)
    assert got["rouge1"] == pytest.approx(_pearson_by_hand([acc[m] for m in models], [rouge[m] for m in models]))
    assert got["word_perplexity"] == pytest.approx(_pearson_by_hand([acc[m] for m in models], [ppl[m] for m in models]))
    assert set(table["n_models"]) == {4}


def test_metric_matrix_is_symmetric_with_unit_diagonal():
    summary, *_ = _summary()
    names, r, p = metric_matrix(summary, "qa", "spearman")
    assert names == ["rouge1", "word_perplexity"]
    assert np.allclose(r, r.T) and np.allclose(np.diag(r), 1.0)
    assert r[0, 1] == pytest.approx(-1.0)  # rouge rises exactly as perplexity falls


def test_benchmark_and_elo_matrices_match_hand_formulas():
    from careval.analysis.correlations import ELO, Scores, benchmark_matrices, elo_matrix

    summary, acc, rouge, _ = _summary()
    rouge_b = {"m1": 0.5, "m2": 0.1, "m3": 0.3, "m4": 0.2}
    extra = [{"model": m, "benchmark": "qb", "task": "open", "metric": "rouge1", "value": v, "n": 5, "n_failed": 0}
             for m, v in rouge_b.items()]
    summary = pl.concat([summary, pl.DataFrame(extra, schema=SUMMARY_SCHEMA)])
    models = sorted(acc)
    table = benchmark_matrices(summary, ["pearson"])
    r = table.filter((pl.col("metric") == "rouge1") & (pl.col("x") == "qa") & (pl.col("y") == "qb"))["r"][0]
    assert r == pytest.approx(_pearson_by_hand([rouge[m] for m in models], [rouge_b[m] for m in models]))
    assert set(table["metric"]) == {"rouge1"}  # word_perplexity is on one benchmark only
    elo = {"m1": 1000.0, "m2": 1100.0, "m3": 1050.0}  # m4 has no Elo: left out, not zero
    table = elo_matrix(Scores(summary, fixed={ELO: elo}), ["spearman"])
    row = table.filter((pl.col("x") == MCQA_AVERAGE) & (pl.col("y") == "elo"))
    assert row["n_models"][0] == 3
    assert row["r"][0] == pytest.approx(_pearson_by_hand(_ranks([acc[m] for m in elo]), _ranks(list(elo.values()))))
