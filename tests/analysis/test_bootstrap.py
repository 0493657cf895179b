"""Bootstrap intervals: the same resampling scheme and seed as scipy.stats.bootstrap give the same interval."""

import warnings

import numpy as np
import polars as pl
import pytest
from scipy import stats

from careval.analysis.aggregate import MCQA_AVERAGE, ScoreFile, build_sample_table, build_summary
from careval.analysis.statistics.bootstrap import (
    correlation_interval,
    resample_indices,
    resample_model_scores,
    rowwise_correlation,
)
from careval.schemas import SUMMARY_SAMPLE_SCHEMA
from careval.scoring import score_perplexity

MODELS = ["m1", "m2", "m3", "m4", "m5"]


def _table(acc: np.ndarray, rouge: np.ndarray) -> pl.DataFrame:
    rows = []
    for i, model in enumerate(MODELS):
        rows += [
            {
                "model": model,
                "benchmark": "bench_a",
                "task": "mcqa",
                "metric": "acc",
                "id": f"a{j:02d}",
                "value": float(v),
                "status": "ok",
                "weight": 1.0,
            }
            for j, v in enumerate(acc[i])
        ]
        rows += [
            {
                "model": model,
                "benchmark": "bench_b",
                "task": "open",
                "metric": "rouge1",
                "id": f"b{j:02d}",
                "value": float(v),
                "status": "ok",
                "weight": 1.0,
            }
            for j, v in enumerate(rouge[i])
        ]
    return pl.DataFrame(rows, schema=SUMMARY_SAMPLE_SCHEMA)


def _pearson_across_models(a, b, axis=-1):
    # an independent formula: per-model means, then Pearson across the model axis (axis 0)
    x, y = a.mean(axis=axis), b.mean(axis=axis)
    dx, dy = x - x.mean(axis=0), y - y.mean(axis=0)
    return (dx * dy).sum(axis=0) / np.sqrt((dx**2).sum(axis=0) * (dy**2).sum(axis=0))


@pytest.mark.parametrize("seed", [7, 2024])
def test_interval_matches_scipy_bootstrap_on_the_same_scheme(seed):
    rng = np.random.default_rng(0)
    acc = (rng.random((5, 9)) < np.linspace(0.2, 0.8, 5)[:, None]).astype(float)
    rouge = rng.random((5, 7)) * np.linspace(0.5, 1.0, 5)[:, None]
    resampled = resample_model_scores(_table(acc, rouge), n_resamples=300, seed=seed)
    ours = correlation_interval(resampled, (MCQA_AVERAGE, "acc"), ("bench_b", "rouge1"), "pearson", 0.95)
    # scipy resamples each of several independent samples in turn (paired=False): bench_a's ids, then bench_b's
    reference = stats.bootstrap(
        (acc, rouge),
        _pearson_across_models,
        n_resamples=300,
        paired=False,
        vectorized=True,
        axis=-1,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(seed),
    )
    assert ours == pytest.approx(tuple(reference.confidence_interval), abs=1e-12)
    assert ours[0] < _pearson_across_models(acc, rouge) < ours[1]


def test_resample_indices_draw_per_benchmark_in_order():
    first, second = resample_indices([3, 5], 4, seed=11)
    rng = np.random.default_rng(11)
    assert np.array_equal(first, rng.integers(0, 3, (4, 3)))
    assert np.array_equal(second, rng.integers(0, 5, (4, 5)))


def test_rowwise_correlation_matches_scipy_per_row():
    rng = np.random.default_rng(3)
    x, y = rng.random((6, 5)), rng.random((6, 5))
    x[2, 1] = np.nan  # a model missing in one resample: dropped from that row only
    y[4] = 0.5  # constant row: undefined
    for method, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
        got = rowwise_correlation(x, y, method)
        for row in range(6):
            keep = np.isfinite(x[row]) & np.isfinite(y[row])
            if row == 4:
                assert np.isnan(got[row])
            else:
                assert got[row] == pytest.approx(function(x[row, keep], y[row, keep]).statistic)


def test_point_estimate_reproduces_the_corpus_perplexity_of_the_summary(tmp_path):
    """Row 0 (no resampling) is the summary's value: lm-eval's corpus perplexity, recomputed from per-sample rows."""
    samples = pl.DataFrame(
        {"id": ["s1", "s2", "s3"], "reference": ["one two three", "four five", "six seven eight nine"]}
    )
    files = []
    for model, shift in (("m1", 0.0), ("m2", -3.0), ("m3", -1.0)):
        logliks = pl.DataFrame(
            {
                "id": ["s1", "s2", "s3"] * 2,
                "kind": ["reference"] * 3 + ["reference_given_question"] * 3,
                "loglik": [-9.0 + shift, -4.0, -20.0, -7.0, -3.0 + shift, -15.0],
            }
        )
        path = tmp_path / f"{model}.parquet"
        score_perplexity(samples, logliks).write_parquet(path)
        files.append(ScoreFile(model, "qa", "open", path))
    summary = build_summary(files)
    resampled = resample_model_scores(build_sample_table(files), n_resamples=5, seed=1)
    for metric in ("word_perplexity", "byte_perplexity", "bits_per_byte", "word_perplexity_given_question"):
        expected = [
            summary.filter((pl.col("model") == m) & (pl.col("metric") == metric))["value"][0] for m in resampled.models
        ]
        assert resampled.scores[("qa", metric)][0] == pytest.approx(expected, rel=1e-12)


def test_failed_samples_are_left_out_of_every_resample():
    rows = [
        {
            "model": m,
            "benchmark": "qa",
            "task": "open",
            "metric": "rouge1",
            "id": i,
            "value": v,
            "status": s,
            "weight": 1.0,
        }
        for m, i, v, s in [
            ("m1", "a", 0.2, "ok"),
            ("m1", "b", float("nan"), "empty_output"),
            ("m1", "c", 0.6, "ok"),
            ("m2", "a", 0.1, "ok"),
            ("m2", "b", 0.3, "ok"),
            ("m2", "c", 0.5, "ok"),
        ]
    ]
    resampled = resample_model_scores(pl.DataFrame(rows, schema=SUMMARY_SAMPLE_SCHEMA), n_resamples=50, seed=5)
    scores = resampled.scores[("qa", "rouge1")]
    assert scores[0] == pytest.approx([0.4, 0.3])  # m1: mean of a and c only, as in the summary
    index = resample_indices([3], 50, seed=5)[0]
    m1 = np.array([0.2, np.nan, 0.6])[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanmean(m1, axis=1)  # a resample of only b's is NaN, not 0
    assert np.allclose(scores[1:, 0], expected, equal_nan=True)


def test_judge_grades_read_from_the_distribution_are_resampled_as_in_the_summary():
    rows = [
        {
            "model": m,
            "benchmark": "qa",
            "task": "open",
            "metric": "judge_helpfulness",
            "id": i,
            "value": v,
            "status": s,
            "weight": 1.0,
        }
        for m, i, v, s in [
            ("m1", "a", 4.0, "ok"),
            ("m1", "b", 2.0, "from_distribution"),
            ("m1", "c", float("nan"), "parse_error"),
            ("m2", "a", 1.0, "from_distribution"),
            ("m2", "b", 3.0, "ok"),
            ("m2", "c", 5.0, "ok"),
        ]
    ]
    resampled = resample_model_scores(pl.DataFrame(rows, schema=SUMMARY_SAMPLE_SCHEMA), n_resamples=5, seed=2)
    assert resampled.scores[("qa", "judge_helpfulness")][0] == pytest.approx([3.0, 3.0])


def test_the_resampled_mcqa_average_is_over_its_members_like_the_summary():
    rng = np.random.default_rng(3)
    table = _table((rng.random((5, 9)) < 0.5).astype(float), rng.random((5, 7)))
    other = table.filter(pl.col("benchmark") == "bench_a").with_columns(
        benchmark=pl.lit("bench_es"), value=1.0 - pl.col("value")
    )
    both = pl.concat([table, other])
    members = resample_model_scores(both, n_resamples=20, seed=1, mcqa_average=["bench_a"])
    # the average of one member is that member's accuracy, resample by resample; with bench_es it is not
    assert np.array_equal(members.scores[(MCQA_AVERAGE, "acc")], members.scores[("bench_a", "acc")])
    every = resample_model_scores(both, n_resamples=20, seed=1)
    assert not np.allclose(every.scores[(MCQA_AVERAGE, "acc")], every.scores[("bench_a", "acc")])
