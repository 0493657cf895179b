"""Correlation tests whose p-value is exact where the sample is small.

Over few models the usual p-values fail: scipy's Spearman p is a t approximation (a perfect rank order of 3 models
gets p = 0, where the exact two-sided p is 1/3), Pearson's assumes bivariate normality and Kendall's falls back to a
normal approximation as soon as there are ties. Below EXACT_BELOW pairs the p-value is therefore the exact
permutation p: the statistic over all n! pairings of the y values with the x values (ties kept as they are), two-sided
as scipy.stats.permutation_test(permutation_type='pairings') computes it (twice the smaller tail, at most 1), which
the tests check it against. From EXACT_BELOW pairs on, n! pairings are too many and the approximations are good:
scipy's own p (its name in P_METHODS).
"""

from __future__ import annotations

import itertools
import math
import warnings
from functools import cache

import numpy as np

EXACT_BELOW = 10  # fewer pairs than this: all n! pairings (9! = 362,880 at most)
METHODS = ("pearson", "spearman", "kendall")
PERMUTATION_EXACT = "permutation_exact"
# the p-value's method from EXACT_BELOW pairs on (scipy's defaults)
P_METHODS = {"pearson": "t_test", "spearman": "t_approximation", "kendall": "kendall_scipy_auto"}


@cache
def pairings(n: int) -> np.ndarray:
    """Every permutation of range(n), one per row (n! x n)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int8).reshape(-1, n)


def _signs(x: np.ndarray) -> np.ndarray:
    """sign(x_i - x_j) over the pairs i < j, along the last axis."""
    i, j = np.triu_indices(x.shape[-1], 1)
    return np.sign(x[..., i] - x[..., j])


def statistic(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    """The correlation of x with every row of y (..., n): Pearson's r, Spearman's rho (Pearson's r of the average
    ranks) or Kendall's tau-b; NaN where a row is constant."""
    from scipy import stats  # here: the plan imports this module's callers for their job specs (~1 s)

    if method == "spearman":
        x, y = stats.rankdata(x), stats.rankdata(y, axis=-1)
    if method in ("pearson", "spearman"):
        xc = x - x.mean()
        yc = y - y.mean(-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (yc @ xc) / np.sqrt((xc @ xc) * (yc * yc).sum(-1))
    if method == "kendall":
        sx, sy = _signs(x), _signs(y)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (sy @ sx) / np.sqrt(np.abs(sx).sum() * np.abs(sy).sum(-1))
    raise ValueError(f"unknown correlation method '{method}' ({', '.join(METHODS)})")


def permutation_p(x: np.ndarray, y: np.ndarray, method: str) -> tuple[float, float]:
    """(statistic, exact two-sided permutation p) over all n! pairings of y with x."""
    from scipy import stats  # here: the plan imports this module's callers for their job specs (~1 s)

    observed = float(statistic(x, y, method))
    perms = pairings(len(y))
    if method == "kendall":  # y's pair signs under each pairing, read off y's sign matrix (no n! x n floats)
        sx, signs = _signs(x), np.sign(y[:, None] - y[None, :]).astype(np.int8)
        i, j = np.triu_indices(len(y), 1)
        sy = signs[perms[:, i], perms[:, j]]
        null = (sy @ sx) / np.sqrt(np.abs(sx).sum() * np.abs(sy[0]).sum())  # tie counts do not change with pairing
    else:  # a permuted vector's ranks are its ranks permuted: rank once
        ranked = method == "spearman"
        xs, ys = (stats.rankdata(x), stats.rankdata(y)) if ranked else (x, y)
        null = statistic(xs, ys[perms], "pearson")
    # scipy's tolerance: values within a relative 1e-14 of the observed count as equal (float noise of exact ties)
    gamma = abs(observed) * 1e-14
    less = np.mean(null <= observed + gamma)
    greater = np.mean(null >= observed - gamma)
    return observed, float(min(1.0, 2 * min(less, greater)))


def _defined(x, y) -> tuple[np.ndarray, np.ndarray] | None:
    """The pairs where both are finite; None where a correlation is undefined (fewer than 3 pairs, or one side
    constant)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    both = np.isfinite(x) & np.isfinite(y)
    x, y = x[both], y[both]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return x, y


def _scipy_test(x: np.ndarray, y: np.ndarray, method: str) -> tuple[float, float]:
    from scipy import stats  # here: the plan imports this module's callers for their job specs (~1 s)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}[method]
        result = test(x, y)
    return float(result.statistic), float(result.pvalue)  # pyright: ignore[reportAttributeAccessIssue]


def correlation_test(x, y, method: str) -> tuple[float, float, str | None]:
    """(statistic, p, p_method) over the pairs where both are finite; NaNs and None where undefined (fewer than 3
    pairs, or one side constant)."""
    pairs = _defined(x, y)
    if pairs is None:
        return math.nan, math.nan, None
    if len(pairs[0]) < EXACT_BELOW:
        return *permutation_p(*pairs, method), PERMUTATION_EXACT
    return *_scipy_test(*pairs, method), P_METHODS[method]


def correlation(x, y, method: str) -> float:
    """correlation_test's statistic alone: a bootstrap's resamples read no p, and the exact p of a small sample costs
    all n! pairings (9!: 362,880) for each."""
    pairs = _defined(x, y)
    if pairs is None:
        return math.nan
    if len(pairs[0]) < EXACT_BELOW:
        return float(statistic(*pairs, method))
    return _scipy_test(*pairs, method)[0]
