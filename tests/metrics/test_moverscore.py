"""MoverScorer: hand-checked transport costs, identity, side swap, and real MeQSum text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from careval.metrics.moverscore import MoverScorer, idf_weights, transport_cost


# --- transport function on tiny explicit point sets ------------------------------------------
def test_transport_obvious_matching():
    # Two points each side, equal weights: pair each point with its near twin.
    x = np.array([[0.0, 0.0], [10.0, 0.0]])
    y = np.array([[0.0, 1.0], [10.0, 2.0]])
    cost = transport_cost(x, [1.0, 1.0], y, [1.0, 1.0])
    assert cost == pytest.approx(0.5 * 1.0 + 0.5 * 2.0)


def test_transport_splits_mass():
    # One reference point of mass 1 against two hypothesis points of mass 3/4 and 1/4
    # (unnormalised weights 3 and 1): everything must flow out of the single point.
    x = np.array([[0.0, 0.0]])
    y = np.array([[3.0, 4.0], [0.0, 2.0]])
    cost = transport_cost(x, [2.0], y, [3.0, 1.0])
    assert cost == pytest.approx(0.75 * 5.0 + 0.25 * 2.0)


def test_transport_splits_mass_both_sides():
    # a = (1/2, 1/2) at 0 and 1 on a line; b = (1/4, 3/4) at 0 and 1.
    # Optimal: 1/4 stays at 0, 1/2 stays at 1, 1/4 moves 0 -> 1 at distance 1.
    x = np.array([[0.0], [1.0]])
    y = np.array([[0.0], [1.0]])
    assert transport_cost(x, [1.0, 1.0], y, [1.0, 3.0]) == pytest.approx(0.25)


def test_transport_zero_weight_points_ignored_and_empty_side():
    x = np.array([[0.0, 0.0], [100.0, 100.0]])
    y = np.array([[0.0, 3.0]])
    assert transport_cost(x, [1.0, 0.0], y, [5.0]) == pytest.approx(3.0)
    # v2's emd_with_flow moves no mass when a side has no weight: cost 0.
    assert transport_cost(x, [0.0, 0.0], y, [1.0]) == 0.0


def test_idf_formula():
    idf = idf_weights([[101, 7, 8, 102], [101, 7, 7, 102], [101, 9, 102]])
    assert idf[101] == 0.0 and idf[102] == 0.0  # in every sentence: log(4/4)
    assert idf[7] == pytest.approx(math.log(4 / 3))  # df counts sentences, not occurrences
    assert idf[8] == pytest.approx(math.log(4 / 2))
    assert idf[12345] == pytest.approx(math.log(4))  # unseen


# --- encoder-backed checks -------------------------------------------------------------------
@pytest.fixture(scope="module")
def scorer() -> MoverScorer:
    return MoverScorer(batch_size=8)


@pytest.fixture(scope="module")
def meqsum(load_rows):
    rows = load_rows("meqsum", 8)
    return [r["CHQ"] for r in rows], [r["Summary"] for r in rows]


def test_identical_sentences_score_one(scorer, meqsum):
    _, summaries = meqsum
    got = scorer.score(summaries, summaries)["moverscore"]
    assert got == pytest.approx([1.0] * len(summaries), abs=1e-12)


@pytest.mark.slow  # ~5 s of encoder passes; test_related_pairs_beat_unrelated stays in the quick loop
def test_swapping_sides_is_symmetric(scorer, meqsum):
    # Swapping the whole lists moves each side's own-corpus IDF along with it, and the Euclidean
    # cost is symmetric, so the scores are equal (up to solver rounding).
    chq, summ = meqsum
    ab = scorer.score(summ, chq)["moverscore"]
    ba = scorer.score(chq, summ)["moverscore"]
    assert ab == pytest.approx(ba, rel=1e-9, abs=1e-12)
    # With one shared corpus on both sides the IDF dicts coincide too: still symmetric per pair.
    rolled = summ[1:] + summ[:1]
    assert scorer.score(summ, rolled)["moverscore"] == pytest.approx(
        scorer.score(rolled, summ)["moverscore"], rel=1e-9, abs=1e-12
    )


def test_related_pairs_beat_unrelated(scorer, meqsum):
    chq, summ = meqsum
    aligned = scorer.score(summ, chq)["moverscore"]
    shuffled = scorer.score(summ[1:] + summ[:1], chq)["moverscore"]
    assert all(0.0 < s <= 1.0 for s in aligned + shuffled)
    assert np.mean(aligned) > np.mean(shuffled)
    # Row 0: "Who manufactures cetirizine?" against its own question vs the bromocriptine one.
    assert aligned[0] > shuffled[0]


@pytest.mark.slow  # ~5 s of encoder passes
def test_deterministic_and_input_checks(scorer, meqsum):
    chq, summ = meqsum
    first = scorer.score(summ, chq)["moverscore"]
    assert scorer.score(summ, chq)["moverscore"] == first
    assert scorer.score([], []) == {"moverscore": []}
    with pytest.raises(ValueError):
        scorer.score(["a"], [])
