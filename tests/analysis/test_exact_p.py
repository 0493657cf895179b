"""Exact permutation p-values of correlations over few models, against a brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from careval.analysis.statistics.bootstrap import rowwise_correlation
from careval.analysis.statistics.correlations import correlate
from careval.analysis.statistics.exact import EXACT_BELOW, PERMUTATION_EXACT, correlation, correlation_test
from careval.analysis.studies.tables import kendall


def _kendall_by_pairs(x, y) -> np.ndarray:
    """tau-b of x with each row of y, counting concordant and discordant pairs one pair at a time."""
    y = np.atleast_2d(y)
    s, tx, ty = np.zeros(len(y)), 0.0, np.zeros(len(y))
    for i, j in itertools.combinations(range(len(x)), 2):
        a, b = np.sign(x[i] - x[j]), np.sign(y[:, i] - y[:, j])
        s, tx, ty = s + a * b, tx + abs(a), ty + np.abs(b)
    return s / np.sqrt(tx * ty)


def _statistic(x, y, method) -> np.ndarray:
    """scipy's statistic of x with each row of y (rows: pairings)."""
    y = np.atleast_2d(y)
    if method == "pearson":
        return stats.pearsonr(np.broadcast_to(x, y.shape), y, axis=1).statistic
    if method == "spearman":
        ranked = stats.rankdata(y, axis=1)
        return stats.pearsonr(np.broadcast_to(stats.rankdata(x), y.shape), ranked, axis=1).statistic
    return _kendall_by_pairs(x, y)


def _brute_force_p(x, y, method) -> float:
    """Two-sided: twice the smaller tail over every pairing (scipy.stats.permutation_test's definition)."""
    observed = _statistic(x, y, method)[0]
    null = _statistic(x, y[np.array(list(itertools.permutations(range(len(y)))))], method)
    tol = abs(observed) * 1e-9
    return min(1.0, 2 * min(np.mean(null <= observed + tol), np.mean(null >= observed - tol)))


@pytest.mark.parametrize("n", range(3, 9))
@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_exact_p_matches_every_pairing_enumerated_by_hand_ties_included(n, method):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 4, n).astype(float)  # few distinct values: ties on both sides
    y = rng.integers(0, 3, n).astype(float) + 0.5 * x
    x[0], x[1], y[0], y[1] = 0, 5, 0, 5  # never constant
    r, p, how = correlation_test(x, y, method)
    assert how == PERMUTATION_EXACT
    assert r == pytest.approx(_statistic(x, y, method)[0])
    if method == "kendall":
        assert r == pytest.approx(stats.kendalltau(x, y).statistic)
    assert p == pytest.approx(_brute_force_p(x, y, method), abs=1e-12)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_exact_p_agrees_with_scipys_permutation_test(method):
    x = np.array([1.0, 2.0, 2.0, 3.0, 5.0])
    y = np.array([2.0, 1.0, 4.0, 4.0, 6.0])

    def stat(a, axis=-1):
        return _statistic(x, a, method)

    scipy_p = stats.permutation_test((y,), stat, permutation_type="pairings", n_resamples=math.inf).pvalue
    assert correlation_test(x, y, method)[1] == pytest.approx(scipy_p)


def test_a_perfect_order_of_three_models_is_one_in_three_not_zero():
    """The issue's case: scipy's Spearman t approximation gives p = 0; the exact two-sided p is 2/3! = 1/3."""
    assert stats.spearmanr([1, 2, 3], [4, 5, 6]).pvalue == pytest.approx(0.0, abs=1e-12)
    r, p, how = correlate([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], "spearman")
    assert (r, p, how) == (pytest.approx(1.0), pytest.approx(1 / 3), PERMUTATION_EXACT)


def test_from_ten_models_on_the_p_value_is_scipys():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=EXACT_BELOW), rng.normal(size=EXACT_BELOW)
    assert correlation_test(x, y, "spearman")[1:] == (pytest.approx(stats.spearmanr(x, y).pvalue), "t_approximation")
    assert correlation_test(x, y, "kendall")[1] == pytest.approx(stats.kendalltau(x, y).pvalue)


def test_undefined_correlations_have_no_p_and_no_method():
    assert correlate([1.0, 2.0], [3.0, 4.0], "kendall")[2] is None
    assert math.isnan(correlate([1.0, 1.0, 1.0], [3.0, 4.0, 5.0], "pearson")[1])


def test_the_bootstraps_kendall_is_scipys_tau_b_per_resample_row():
    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 3, (20, 6)).astype(float), rng.integers(0, 3, (20, 6)).astype(float)
    x[:, :2], y[:, :2] = [0, 9], [0, 9]  # never constant
    x[3, 4] = np.nan  # a model missing from one resample drops out of that row only
    expected = [stats.kendalltau(a[np.isfinite(a)], b[np.isfinite(a)]).statistic for a, b in zip(x, y)]
    assert rowwise_correlation(x, y, "kendall") == pytest.approx(expected)


def test_a_studys_kendall_needs_three_ranked_models_and_one_changed():
    assert math.isnan(kendall({"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 1.0})[0])  # two ranked
    same = {"a": 1.0, "b": 2.0, "c": 3.0}
    assert math.isnan(kendall(same, dict(same))[0])  # nothing changed: one ranking, not two
    tau, p, ranked = kendall({"a": 2.5, "b": 2.0, "c": 3.0}, same)
    assert (tau, ranked) == (pytest.approx(stats.kendalltau([2.5, 2, 3], [1, 2, 3]).statistic), 3)
    assert p == pytest.approx(_brute_force_p(np.array([2.5, 2, 3]), np.array([1.0, 2, 3]), "kendall"))


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_the_statistic_alone_is_the_tests_own_below_and_from_ten_pairs(method):
    """correlation (a bootstrap resample's: no p) is exactly correlation_test's statistic, NaN pairs dropped alike,
    on both sides of EXACT_BELOW (scipy's statistic from there), and NaN where the test has none."""
    rng = np.random.default_rng(4)
    for n in (4, EXACT_BELOW, EXACT_BELOW + 1, 25):  # one pair dropped: 3, 9, 10 and 24 pairs
        x, y = rng.integers(0, 4, n).astype(float), rng.normal(size=n)
        x[0], x[1] = 0.0, 5.0  # never constant
        y[-1] = np.nan
        assert correlation(x, y, method) == correlation_test(x, y, method)[0]
    expected = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}[method]
    assert correlation(x[:-1], y[:-1], method) == pytest.approx(expected(x[:-1], y[:-1]).statistic)
    assert math.isnan(correlation([1.0, 1.0, 1.0], [3.0, 4.0, 5.0], method))
    assert math.isnan(correlation([1.0, 2.0, np.nan], [3.0, 4.0, 5.0], method))  # two finite pairs
