"""MCQA acc / acc_norm and the question-weighted average, checked by hand."""

from __future__ import annotations

import math

import pytest

from careval.metrics import accuracy, mcqa_predictions, weighted_average


def test_acc_and_acc_norm_disagree_on_option_length():
    # Raw ll prefers the short option; per character the long one is far likelier.
    pred, pred_norm = mcqa_predictions([[-10.0, -12.0]], [["no", "a much longer answer"]])
    assert pred == [0]
    assert pred_norm == [1]  # -10/2 = -5 < -12/20 = -0.6


def test_acc_norm_divides_by_characters_not_bytes():
    # chars: -6/3 = -2 vs -7/4 = -1.75 -> option 1; bytes would give -6/6 = -1 vs -1.75 -> option 0.
    _, pred_norm = mcqa_predictions([[-6.0, -7.0]], [["ééé", "abcd"]])
    assert pred_norm == [1]


def test_ties_take_the_first_option_like_numpy_argmax():
    pred, pred_norm = mcqa_predictions([[-1.0, -1.0, -3.0]], [["ab", "ab", "c"]])
    assert pred == [0] and pred_norm == [0]


def test_real_medqa_options(load_rows):
    rows = load_rows("medqa", 20)
    choices = [list(r["options"].values()) for r in rows]
    # Same ll per character for every option: acc picks the shortest, acc_norm the first.
    lls = [[-0.5 * len(c) for c in opts] for opts in choices]
    pred, pred_norm = mcqa_predictions(lls, choices)
    assert pred == [min(range(len(o)), key=lambda i: (len(o[i]), i)) for o in choices]
    assert pred_norm == [0] * len(rows)
    gold = ["ABCD".index(r["answer_idx"]) for r in rows]
    assert accuracy(pred, gold) == sum(p == g for p, g in zip(pred, gold)) / 20


def test_accuracy_by_hand():
    assert accuracy([0, 1, 2, 3], [0, 1, 0, 0]) == 0.5
    assert accuracy([2], [2]) == 1.0
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError):
        accuracy([0], [0, 1])


def test_weighted_average_by_hand():
    # (0.5*100 + 0.8*300) / 400, not the plain mean 0.65.
    assert weighted_average([(0.5, 100), (0.8, 300)]) == pytest.approx(0.725)
    assert weighted_average([(0.3, 7)]) == pytest.approx(0.3)
    assert math.isnan(weighted_average([]))
    with pytest.raises(ValueError):
        weighted_average([(0.5, -1)])


def test_malformed_questions_are_errors():
    with pytest.raises(ValueError):
        mcqa_predictions([[-1.0, -2.0]], [["a"]])
    with pytest.raises(ValueError):
        mcqa_predictions([[]], [[]])
    with pytest.raises(ValueError):
        mcqa_predictions([[-1.0]], [])
