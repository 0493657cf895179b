"""careval.analysis.statistics.reliability: which ratings go to the libraries, as which raters and units, against published
values and hand computations; its own ICC against pingouin."""

import math

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from careval.analysis.statistics.reliability import icc, kendall_tau, krippendorff_alpha, quadratic_kappa

NAN = math.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers x 12 units, missing
# values; published alpha: interval 0.849, ordinal 0.815.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
# Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges; published ICC(2,1) = .29, ICC(2,4) = .62.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float
).T  # raters x units


def test_alpha_matches_krippendorffs_published_example():
    assert krippendorff_alpha(KRIPPENDORFF_2011, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "ordinal") == pytest.approx(0.815, abs=5e-4)


def test_alpha_interval_by_hand():
    # units (1,1), (2,2), (3,4): coincidences o11 = o22 = 2, o34 = o43 = 1; n_c = 2, 2, 1, 1; n = 6
    # D_o: sum o delta^2 = 2; D_e: sum n_c n_k delta^2 = 82; alpha = 1 - (n - 1) * 2 / 82
    data = np.array([[1, 2, 3], [1, 2, 4]], dtype=float)
    assert krippendorff_alpha(data, "interval") == pytest.approx(1 - 5 * 2 / 82)


def test_alpha_ordinal_by_hand():
    # same units; ordinal delta_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 with n = (2, 2, 1, 1) over values 1..4
    data = np.array([[1, 2, 3], [1, 2, 4]], dtype=float)
    n = {1: 2, 2: 2, 3: 1, 4: 1}

    def delta(c, k):
        lo, hi = min(c, k), max(c, k)
        return (sum(n[g] for g in range(lo, hi + 1)) - (n[c] + n[k]) / 2) ** 2

    observed = 2 * delta(3, 4)
    expected = sum(n[c] * n[k] * delta(c, k) for c in n for k in n)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(1 - 5 * observed / expected)


def test_alpha_is_nan_where_undefined_and_ignores_lone_units():
    # the package raises on a one-value domain; careval reads that as undefined
    assert math.isnan(krippendorff_alpha(np.array([[2, 2, NAN], [2, NAN, 4]])))
    assert math.isnan(krippendorff_alpha(np.array([[3, 3], [3, 3]], dtype=float)))
    with_lone = np.array([[1, 2, 3, 5], [1, 2, 4, NAN]])
    assert krippendorff_alpha(with_lone) == krippendorff_alpha(with_lone[:, :3])


def test_icc_matches_shrout_fleiss():
    single, average = icc(SHROUT_FLEISS)
    assert single == pytest.approx(0.29, abs=0.005)
    assert average == pytest.approx(0.62, abs=0.005)


def test_icc_drops_incomplete_units():
    data = np.hstack([SHROUT_FLEISS, np.array([[1], [NAN], [3], [4]])])
    assert icc(data) == pytest.approx(icc(SHROUT_FLEISS))


def test_quadratic_kappa_by_hand_and_sklearn():
    a, b = np.array([1, 2, 3, 4, 5, 2]), np.array([1, 2, 4, 4, 3, 1])
    labels = [1, 2, 3, 4, 5]
    observed = np.zeros((5, 5))
    for x, y in zip(a, b):
        observed[x - 1, y - 1] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / len(a)
    weights = np.array([[(i - j) ** 2 for j in range(5)] for i in range(5)], dtype=float)
    by_hand = 1 - (weights * observed).sum() / (weights * expected).sum()
    assert quadratic_kappa(a, b, labels) == pytest.approx(by_hand)
    assert quadratic_kappa(a, b, labels) == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    assert quadratic_kappa(np.append(a, NAN), np.append(b, 2), labels) == pytest.approx(by_hand)


def test_kendall_tau_by_counting_pairs():
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0])
    concordant = sum((a[i] - a[j]) * (b[i] - b[j]) > 0 for i in range(4) for j in range(i))
    discordant = sum((a[i] - a[j]) * (b[i] - b[j]) < 0 for i in range(4) for j in range(i))
    assert kendall_tau(a, b) == pytest.approx((concordant - discordant) / 6)
    assert kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic)


def test_icc_against_pingouin():
    import pandas as pd
    import pingouin

    rng = np.random.default_rng(4)
    data = rng.integers(1, 6, size=(3, 30)).astype(float)
    long = pd.DataFrame(
        [(u, r, data[r, u]) for r in range(data.shape[0]) for u in range(data.shape[1])],
        columns=["unit", "rater", "rating"],
    )
    table = pingouin.intraclass_corr(long, targets="unit", raters="rater", ratings="rating").set_index("Type")
    single, average = icc(data)
    # pingouin 0.7 names ICC(2,1) "ICC(A,1)" (absolute agreement, two-way random) and ICC(2,k) "ICC(A,k)"
    assert single == pytest.approx(table.loc["ICC(A,1)", "ICC"])
    assert average == pytest.approx(table.loc["ICC(A,k)", "ICC"])
