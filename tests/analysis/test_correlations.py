"""Correlations across models, checked against hand formulas."""

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.statistics.bootstrap import resample_model_scores
from careval.analysis.statistics.correlations import (
    Scores,
    correlate,
    mcqa_vs_open,
    metric_matrices,
    square,
)
from careval.schemas import CORRELATION_SCHEMA, SUMMARY_SAMPLE_SCHEMA, SUMMARY_SCHEMA


def _exact_p(x, y, test) -> float:
    """scipy's permutation test over every pairing of y with x (the p of a correlation over fewer than 10 models)."""
    x = np.asarray(x, float)
    return stats.permutation_test(
        (np.asarray(y, float),),
        lambda ys: test(x, ys).statistic,
        permutation_type="pairings",
        n_resamples=math.inf,
        vectorized=False,
    ).pvalue


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
    assert math.isnan(correlate([1, 2], [3, 4], "pearson")[0])  # too few models
    assert math.isnan(correlate([1, 1, 1], [3, 4, 5], "spearman")[0])  # constant input
    assert math.isnan(correlate([1, float("nan"), 2], [3, 4, 5], "pearson")[0])  # NaN drops a model


def _summary():
    rows = []
    acc = {"m1": 0.3, "m2": 0.5, "m3": 0.6, "m4": 0.9}
    rouge = {"m1": 0.1, "m2": 0.3, "m3": 0.2, "m4": 0.4}
    ppl = {"m1": 30.0, "m2": 20.0, "m3": 25.0, "m4": 10.0}
    for model in acc:
        rows.append(
            {
                "model": model,
                "benchmark": MCQA_AVERAGE,
                "task": "mcqa",
                "metric": "acc",
                "value": acc[model],
                "n": 10,
                "n_failed": 0,
            }
        )
        rows.append(
            {
                "model": model,
                "benchmark": "qa",
                "task": "open",
                "metric": "rouge1",
                "value": rouge[model],
                "n": 5,
                "n_failed": 0,
            }
        )
        rows.append(
            {
                "model": model,
                "benchmark": "qa",
                "task": "open",
                "metric": "word_perplexity",
                "value": ppl[model],
                "n": 5,
                "n_failed": 0,
            }
        )
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
    names, r = square(metric_matrices(summary, ["spearman"]).filter(pl.col("benchmark") == "qa"))
    assert names == ["rouge1", "word_perplexity"]
    assert np.allclose(r, r.T) and np.allclose(np.diag(r), 1.0)
    assert r[0, 1] == pytest.approx(-1.0)  # rouge rises exactly as perplexity falls


# registered metrics (their direction orients `agreement`), perplexities (lower is better, averaged geometrically) too
MATRIX_METRICS = ["rouge1", "word_perplexity", "bleu", "bertscore_f1", "rouge2", "rougeL", "bertscore_precision",
                  "bertscore_recall", "moverscore", "byte_perplexity"]  # fmt: skip


def _resampled_scores(n_models: int, n_metrics: int, n_resamples: int) -> Scores:
    """Random per-sample values of n_models x n_metrics on one open benchmark (some samples failed), their summary
    (the resamples' row 0) and bootstrap resamples."""
    rng = np.random.default_rng(n_models)
    rows = [
        {"model": f"m{i}", "benchmark": "qa", "task": "open", "metric": metric, "id": f"s{j}",
         "value": float(rng.uniform(1, 3) + i * k % 5), "status": "ok" if rng.random() > 0.05 else "failed",
         "weight": 1.0}
        for i in range(n_models)
        for k, metric in enumerate(MATRIX_METRICS[:n_metrics])
        for j in range(12)
    ]  # fmt: skip
    resampled = resample_model_scores(pl.DataFrame(rows, schema=SUMMARY_SAMPLE_SCHEMA), n_resamples, 3)
    summary = pl.DataFrame(
        [{"model": m, "benchmark": b, "task": "open", "metric": k, "value": v, "n": 12, "n_failed": 0}
         for (b, k), values in resampled.scores.items()
         for m, v in zip(resampled.models, values[0])],
        schema=SUMMARY_SCHEMA,
    )  # fmt: skip
    return Scores(summary, resampled, 0.9)


def _every_ordered_pair(scores: Scores, methods: list[str]) -> pl.DataFrame:
    """The matrix as it was computed before a pair's mirror was copied: Scores.pair on every ordered pair."""
    names = sorted(scores.summary["metric"].unique().to_list())
    rows = [
        scores.pair("metric_x_metric", ("qa", x), ("qa", y), method, x, y, benchmark="qa")
        for method in methods
        for x in names
        for y in names
    ]
    return pl.DataFrame(rows, schema=CORRELATION_SCHEMA)


@pytest.mark.parametrize("n_models", [8, 11])  # the exact permutation p (under 10 models) and scipy's
def test_each_pair_computed_once_equals_every_ordered_pair_computed(n_models):
    """The matrix computes a pair once and copies it to its mirror: the same rows as Scores.pair on every ordered
    pair, in the same order; r and p to float rounding (which side is x changes a sum's order), the bootstrap
    interval, n and the p's method exactly."""
    scores = _resampled_scores(n_models, 4, 200)
    methods = ["pearson", "spearman", "kendall"]
    got, want = metric_matrices(scores, methods), _every_ordered_pair(scores, methods)
    assert got.height == want.height == 3 * 4 * 4
    exact = ["analysis", "benchmark", "metric", "x", "y", "method", "p_method", "ci_low", "ci_high", "n_models"]
    assert got.select(exact).equals(want.select(exact))
    for column in ("r", "p_value", "agreement"):
        assert got[column].to_numpy() == pytest.approx(want[column].to_numpy(), rel=1e-12, abs=1e-15)
    paths = {"permutation_exact"} if n_models < 10 else {"t_test", "t_approximation", "kendall_scipy_auto"}
    assert set(got["p_method"]) == paths


@pytest.mark.benchmark
def test_matrix_speed_against_every_ordered_pair():
    """9 models (the exact p: 9! pairings a pair and method) x 10 metrics, 1,000 resamples: the matrix as computed
    now and as Scores.pair on every ordered pair, side by side (`pytest -s -m benchmark`)."""
    import time

    scores = _resampled_scores(9, 10, 1000)
    methods = ["pearson", "spearman", "kendall"]
    start = time.perf_counter()
    metric_matrices(scores, methods)
    once = time.perf_counter() - start
    start = time.perf_counter()
    _every_ordered_pair(scores, methods)
    every = time.perf_counter() - start
    print(f"\nmetric x metric, 9 models x 10 metrics x 3 methods: each pair once {once:.1f} s, every ordered pair "
          f"{every:.1f} s: {every / once:.2f}x")  # fmt: skip


def test_benchmark_and_elo_matrices_match_hand_formulas():
    from careval.analysis.statistics.correlations import ELO, benchmark_matrices, elo_matrix

    summary, acc, rouge, _ = _summary()
    rouge_b = {"m1": 0.5, "m2": 0.1, "m3": 0.3, "m4": 0.2}
    extra = [
        {"model": m, "benchmark": "qb", "task": "open", "metric": "rouge1", "value": v, "n": 5, "n_failed": 0}
        for m, v in rouge_b.items()
    ]
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


def test_agreement_orients_r_by_each_metric_direction():
    # acc rises, perplexity and relaxed cross-entropy fall exactly as it rises, and rouge falls too:
    # raw r is -1 for all three, but only the lower-is-better ones agree with MCQA
    acc = {"m1": 0.2, "m2": 0.4, "m3": 0.6, "m4": 0.8}
    falling = {"m1": 40.0, "m2": 30.0, "m3": 20.0, "m4": 10.0}
    rows = [
        {"model": m, "benchmark": MCQA_AVERAGE, "task": "mcqa", "metric": "acc", "value": v, "n": 10, "n_failed": 0}
        for m, v in acc.items()
    ]
    rows += [
        {"model": m, "benchmark": "qa", "task": "open", "metric": metric, "value": v, "n": 5, "n_failed": 0}
        for metric in ("word_perplexity", "relaxed_cross_entropy", "rouge1")
        for m, v in falling.items()
    ]
    table = mcqa_vs_open(pl.DataFrame(rows, schema=SUMMARY_SCHEMA), ["pearson"])
    got = {row["y"]: (row["r"], row["agreement"]) for row in table.iter_rows(named=True)}
    assert got["word_perplexity"] == pytest.approx((-1.0, 1.0))
    assert got["relaxed_cross_entropy"] == pytest.approx((-1.0, 1.0))
    assert got["rouge1"] == pytest.approx((-1.0, -1.0))


def test_figure_17_is_scipys_correlation_of_the_anchor_with_every_other_score():

    from careval.analysis.statistics.correlations import relaxed_perplexity_vs_all

    models = ["m1", "m2", "m3", "m4", "m5"]
    table = {
        ("olaph", "relaxed_perplexity"): [12.8, 11.2, 15.0, 9.5, 13.3],
        ("olaph", "rouge1"): [0.21, 0.25, 0.18, 0.30, 0.19],
        ("medtext", "relaxed_perplexity"): [2.1, 2.6, 3.9, 2.0, 2.2],
        ("medtext", "bertscore_f1"): [0.80, 0.84, 0.79, 0.86, 0.81],
        (MCQA_AVERAGE, "acc"): [0.55, 0.61, 0.48, 0.70, 0.52],
    }
    rows = [
        {
            "model": m,
            "benchmark": b,
            "task": "mcqa" if b == MCQA_AVERAGE else "open",
            "metric": k,
            "value": v[i],
            "n": 5,
            "n_failed": 0,
        }
        for (b, k), v in table.items()
        for i, m in enumerate(models)
    ]
    got = relaxed_perplexity_vs_all(pl.DataFrame(rows, schema=SUMMARY_SCHEMA), ["pearson", "spearman"], "olaph")
    anchor = table[("olaph", "relaxed_perplexity")]
    assert got.height == 2 * (len(table) - 1)  # every other benchmark x metric, not the anchor itself
    assert set(got["x"]) == {"olaph_relaxed_perplexity"}
    for row in got.iter_rows(named=True):
        other = table[(row["benchmark"], row["y"])]
        test = stats.pearsonr if row["method"] == "pearson" else stats.spearmanr
        expected = (test(anchor, other).statistic, _exact_p(anchor, other, test))
        assert (row["r"], row["p_value"]) == pytest.approx(expected), row
        assert row["p_method"] == "permutation_exact"


def test_figure_1s_task_rows_correlate_the_mcqa_average_with_each_tasks_mean_over_its_benchmarks():
    """Per task and metric: a model's mean over the task's benchmarks (geometric for perplexities), correlated by
    scipy; a model lacking one benchmark's value has no task value; the interval takes the same mean per resample."""

    from careval.analysis.statistics.bootstrap import percentile_interval

    rng = np.random.default_rng(7)
    models = ["m1", "m2", "m3", "m4", "m5"]
    members = {"a": "clinical_note_taking", "b": "clinical_note_taking", "c": "summarization"}
    samples = []
    for i, model in enumerate(models):
        for j in range(8):
            samples.append(("mc", "mcqa", "acc", model, j, float(rng.random() < 0.15 * (i + 1))))
        for benchmark in members:
            for j in range(6):
                samples.append((benchmark, "open", "rouge1", model, j, float(rng.random())))
                samples.append((benchmark, "open", "word_perplexity", model, j, float(rng.uniform(5, 60))))
    frame = pl.DataFrame(
        [{"model": m, "benchmark": b, "task": t, "metric": k, "id": f"s{j}", "value": v, "status": "ok", "weight": 1.0}
         for b, t, k, m, j, v in samples],
        schema=SUMMARY_SAMPLE_SCHEMA,
    )  # fmt: skip
    resampled = resample_model_scores(frame, 200, 4, ["mc"])
    point = {key: dict(zip(resampled.models, values[0])) for key, values in resampled.scores.items()}
    rows = [
        {"model": m, "benchmark": b, "task": "mcqa" if b in ("mc", MCQA_AVERAGE) else "open", "metric": k,
         "value": v, "n": 6, "n_failed": 0}
        for (b, k), values in point.items()
        for m, v in values.items()
        if not (b == "b" and k == "rouge1" and m == "m5")  # m5 has no ROUGE on b: no task value for it
    ]  # fmt: skip
    summary = pl.DataFrame(rows, schema=SUMMARY_SCHEMA)
    table = mcqa_vs_open(Scores(summary, resampled, 0.9), ["pearson"], paper_tasks={"mc": "mcqa", **members})
    got = {(row["benchmark"], row["y"]): row for row in table.iter_rows(named=True)}
    acc = [point[(MCQA_AVERAGE, "acc")][m] for m in models]
    notes = [(point[("a", "word_perplexity")][m] * point[("b", "word_perplexity")][m]) ** 0.5 for m in models]
    row = got[("task:clinical_note_taking", "word_perplexity")]
    assert row["r"] == pytest.approx(stats.pearsonr(acc, notes).statistic)
    assert row["p_value"] == pytest.approx(_exact_p(acc, notes, stats.pearsonr)) and row["n_models"] == 5
    rouge = [(point[("a", "rouge1")][m] + point[("b", "rouge1")][m]) / 2 for m in models[:4]]
    row = got[("task:clinical_note_taking", "rouge1")]
    assert row["r"] == pytest.approx(stats.pearsonr(acc[:4], rouge).statistic) and row["n_models"] == 4
    # one benchmark in its task: the task row is that benchmark's
    assert got[("task:summarization", "rouge1")]["r"] == pytest.approx(got[("c", "rouge1")]["r"])
    # the interval: the geometric mean of a's and b's resampled perplexities, correlated per resample
    x = resampled.scores[(MCQA_AVERAGE, "acc")][1:]
    y = np.sqrt(resampled.scores[("a", "word_perplexity")][1:] * resampled.scores[("b", "word_perplexity")][1:])
    per_resample = np.array([stats.pearsonr(xs, ys).statistic for xs, ys in zip(x, y)])
    low, high = percentile_interval(per_resample, 0.9)
    row = got[("task:clinical_note_taking", "word_perplexity")]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert [k for k in got if k[0].startswith("task:")] == [
        ("task:clinical_note_taking", "rouge1"),
        ("task:clinical_note_taking", "word_perplexity"),
        ("task:summarization", "rouge1"),
        ("task:summarization", "word_perplexity"),
    ]  # Table 1's order of tasks; MCQA is the x, no row of its own
