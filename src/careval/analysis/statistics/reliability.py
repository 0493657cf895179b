"""Inter-rater reliability of a units x raters matrix: Krippendorff's alpha, ICC(2,1) / ICC(2,k), weighted kappa, Kendall's tau.

Raters are judges (careval.analysis.jury.judge_agreement) or people (careval.analysis.jury.human_ratings); units are
the graded answers (model x sample). The kept libraries compute them: `krippendorff.alpha`,
scikit-learn's cohen_kappa_score (quadratic weights) and scipy's kendalltau. The ICCs are written here,
vectorised (Shrout & Fleiss 1979), because the bootstrap recomputes them thousands of times and
pingouin.intraclass_corr builds a pandas ANOVA per call; tests/analysis/test_reliability.py checks them
against pingouin (ICC(A,1), ICC(A,k)) and the published Shrout & Fleiss values on the same inputs.
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

ALPHA_LEVELS = ("interval", "ordinal")


def krippendorff_alpha(ratings: np.ndarray, level: str = "interval") -> float:
    """Krippendorff's alpha (the `krippendorff` package) of `ratings` (raters x units, NaN where a rater did not
    rate a unit). NaN where it is undefined: fewer than two distinct values, or no pairable unit."""
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level must be one of {ALPHA_LEVELS}, got {level!r}")
    data = np.asarray(ratings, dtype=float)
    if np.unique(data[np.isfinite(data)]).size < 2 or not (np.isfinite(data).sum(axis=0) >= 2).any():
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def complete_units(ratings: np.ndarray) -> np.ndarray:
    """The units (columns of raters x units) every rater rated, as a units x raters matrix."""
    data = np.asarray(ratings, dtype=float)
    return data[:, np.isfinite(data).all(axis=0)].T


def icc(ratings: np.ndarray) -> tuple[float, float]:
    """(ICC(2,1), ICC(2,k)) of `ratings` (raters x units): two-way random effects, absolute agreement, one
    rater's and the k raters' mean (Shrout & Fleiss 1979; pingouin's ICC2 and ICC2k). Units a rater missed
    are left out (pingouin's nan_policy='omit'). NaN with fewer than two units or raters, or no variance."""
    x = complete_units(ratings)
    n, k = x.shape
    if n < 2 or k < 2:
        return math.nan, math.nan
    grand = x.mean()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((x - grand) ** 2).sum() - ss_rows - ss_cols
    ms_rows, ms_cols = ss_rows / (n - 1), ss_cols / (k - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    single_denominator = ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n
    average_denominator = ms_rows + (ms_cols - ms_error) / n
    if single_denominator == 0 or average_denominator == 0:
        return math.nan, math.nan
    return float((ms_rows - ms_error) / single_denominator), float((ms_rows - ms_error) / average_denominator)


def quadratic_kappa(a: np.ndarray, b: np.ndarray, labels: list | None = None) -> float:
    """Cohen's kappa with quadratic weights (scikit-learn) over the units both raters graded; NaN with no
    variation to agree on."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    if both.sum() < 2:
        return math.nan
    x, y = a[both], b[both]
    if np.unique(np.concatenate([x, y])).size < 2:
        return math.nan
    value = cohen_kappa_score(x.astype(int), y.astype(int), weights="quadratic", labels=labels)
    return float(value)


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b (scipy) between two raters' scores of the same items (e.g. each model's mean grade)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    if both.sum() < 2:
        return math.nan
    return float(kendalltau(a[both], b[both]).statistic)
