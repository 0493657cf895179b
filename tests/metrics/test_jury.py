"""careval.metrics.jury: the jury's grade from its judges', and a one-judge jury that is exactly today's judge."""

import io
import math

import numpy as np
import polars as pl
import pytest

from careval.metrics.jury import aggregate_values, combine_jury, split_judge
from careval.schemas import JUDGE_SCORE_SCHEMA, REPEAT_SCORE_SCHEMA

NAN = math.nan


def judge_rows(values, statuses, probs=None):
    """Score rows of 3 answers x (judge_helpfulness, judge_helpfulness_expected), as score_judge writes them."""
    rows = []
    for k, (sample, metric) in enumerate(
        [(s, m) for s in ("a", "b", "c") for m in ("judge_helpfulness", "judge_helpfulness_expected")]
    ):
        p = probs[k] if probs is not None else [None] * 5
        rows.append(
            {
                "id": sample,
                "metric": metric,
                "value": values[k],
                "status": statuses[k],
                "level": "sample",
                "weight": 1.0,
                "p1": p[0],
                "p2": p[1],
                "p3": p[2],
                "p4": p[3],
                "p5": p[4],
            }
        )
    return pl.DataFrame(rows, schema=JUDGE_SCORE_SCHEMA)


FIRST = judge_rows(
    [4.0, 3.6, 2.0, 2.5, NAN, NAN],
    ["ok", "ok", "from_distribution", "ok", "empty_output", "empty_output"],
    [[0.0, 0.1, 0.2, 0.3, 0.4]] * 2 + [[0.2, 0.3, 0.2, 0.2, 0.1]] * 2 + [[None] * 5] * 2,
)
SECOND = judge_rows(
    [2.0, 2.4, 3.0, 3.1, NAN, NAN],
    ["ok", "ok", "ok", "ok", "empty_output", "empty_output"],
    [[0.2, 0.2, 0.2, 0.2, 0.2]] * 4 + [[None] * 5] * 2,
)


def test_a_one_judge_jury_is_todays_judge_byte_for_byte():
    combined = combine_jury({"prometheus": FIRST})
    jury = combined.filter(~pl.col("metric").str.contains("@"))
    assert jury.equals(FIRST)
    ours, todays = io.BytesIO(), io.BytesIO()
    jury.write_parquet(ours)
    FIRST.write_parquet(todays)
    assert ours.getvalue() == todays.getvalue()
    judge = combined.filter(pl.col("metric").str.contains("@"))
    assert judge["metric"].to_list() == [m + "@prometheus" for m in FIRST["metric"]]
    assert judge.drop("metric").equals(FIRST.drop("metric"))


def test_the_jury_is_the_judges_mean_and_each_judge_keeps_its_grades():
    combined = combine_jury({"x": FIRST, "y": SECOND}, "mean")
    jury = combined.filter(~pl.col("metric").str.contains("@"))
    assert jury["value"].to_list()[:4] == pytest.approx([3.0, 3.0, 2.5, 2.8])
    # the grade read from a distribution makes the jury's grade read from one; a failed answer stays failed
    assert jury["status"].to_list() == ["ok", "ok", "from_distribution", "ok", "empty_output", "empty_output"]
    assert math.isnan(jury["value"][4])
    # the probabilities: the mixture of the judges'
    assert jury.row(0, named=True)["p5"] == pytest.approx((0.4 + 0.2) / 2)
    assert jury["p1"][4] is None
    assert combined.filter(pl.col("metric") == "judge_helpfulness@y")["value"].to_list()[:2] == [2.0, 3.0]


def test_an_answer_one_judge_could_not_grade_is_no_jury_grade():
    failed = SECOND.with_columns(
        value=pl.when(pl.int_range(pl.len()) == 0).then(NAN).otherwise(pl.col("value")),
        status=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("parse_error")).otherwise(pl.col("status")),
    )
    jury = combine_jury({"x": FIRST, "y": failed}).filter(~pl.col("metric").str.contains("@"))
    assert math.isnan(jury["value"][0]) and jury["status"][0] == "parse_error"


def test_median_and_majority_by_hand():
    grades = np.array([[1.0, 2.0, 2.0], [1.0, 3.0, 5.0], [4.0, 4.0, 1.0], [1.0, 2.0, 4.0]])
    assert aggregate_values(grades, "median").tolist() == [2.0, 3.0, 4.0, 2.0]
    # majority: the most frequent grade; a three-way tie takes the median
    assert aggregate_values(grades, "majority").tolist() == [2.0, 3.0, 4.0, 2.0]
    tie = np.array([[1.0, 1.0, 5.0, 5.0]])
    assert aggregate_values(tie, "majority").tolist() == [3.0]
    assert aggregate_values(np.array([[1.0, 4.0, 4.0]]), "majority", continuous=True).tolist() == [4.0]
    assert aggregate_values(np.array([[1.0, 1.0, 4.0]]), "mean").tolist() == [2.0]
    with pytest.raises(ValueError, match="aggregate"):
        aggregate_values(grades, "mode")


def test_repeats_are_matched_by_id_and_repeat():
    first = pl.DataFrame(
        [("a", 0, "judge_h", 1.0, "ok"), ("a", 1, "judge_h", 5.0, "ok")], schema=REPEAT_SCORE_SCHEMA, orient="row"
    )
    second = pl.DataFrame(  # another row order: matched by key, not position
        [("a", 1, "judge_h", 3.0, "ok"), ("a", 0, "judge_h", 3.0, "ok")], schema=REPEAT_SCORE_SCHEMA, orient="row"
    )
    jury = combine_jury({"x": first, "y": second}).head(2)
    assert jury["value"].to_list() == [2.0, 4.0]
    with pytest.raises(ValueError, match="other answers"):
        combine_jury({"x": first, "y": second.head(1)})


def test_split_judge():
    assert split_judge("judge_helpfulness_expected@prometheus-7b-v2.0") == (
        "judge_helpfulness_expected",
        "prometheus-7b-v2.0",
    )
    assert split_judge("rougeL") == ("rougeL", None)
