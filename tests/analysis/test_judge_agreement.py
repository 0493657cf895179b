"""careval.analysis.jury.judge_agreement and judge_bias: which grades go in, as which units and raters, against hand
computations and the libraries on constructed grades."""

import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score

from careval.analysis.jury.judge_agreement import judge_agreement
from careval.analysis.jury.judge_bias import answer_lengths, judge_bias
from careval.analysis.statistics.reliability import icc, krippendorff_alpha
from careval.schemas import SUMMARY_SAMPLE_SCHEMA

MODELS = ["m1", "m2", "m3"]
IDS = ["s1", "s2", "s3", "s4"]
# grades[judge][model] over IDS
GRADES = {
    "p": {"m1": [5, 4, 4, 3], "m2": [2, 3, 1, 2], "m3": [3, 3, 4, 2]},
    "q": {"m1": [4, 4, 5, 3], "m2": [1, 3, 2, 2], "m3": [3, 2, 4, 3]},
}


def sample_table(grades=GRADES, extra_rows=()):
    rows = []
    for judge, per_model in grades.items():
        for model, values in per_model.items():
            for sample, value in zip(IDS, values):
                status = "ok" if value is not None else "parse_error"
                for metric, v in (("judge_helpfulness", value), ("judge_helpfulness_expected", 9.0)):
                    rows.append(
                        ("demo", "open", f"{metric}@{judge}", model, sample, v if v is not None else math.nan, status)
                    )
    # the jury's own rows and another metric: never units of the judges' agreement
    rows += [("demo", "open", "judge_helpfulness", m, s, 1.0, "ok") for m in MODELS for s in IDS]
    rows += [("demo", "open", "rougeL", m, s, 0.5, "ok") for m in MODELS for s in IDS]
    rows += list(extra_rows)
    return pl.DataFrame(
        [(m, b, t, metric, s, v, st, 1.0) for b, t, metric, m, s, v, st in rows],
        schema=SUMMARY_SAMPLE_SCHEMA,
        orient="row",
    )


def matrix(grades=GRADES):
    """judges x units (model-major, sample-minor), the hand layout."""
    return np.array([[v for m in MODELS for v in grades[j][m]] for j in grades], dtype=float)


def statistic(table, name, judges="p | q"):
    row = table.filter((pl.col("statistic") == name) & (pl.col("judges") == judges))
    assert row.height == 1, name
    return row.row(0, named=True)


def test_agreement_statistics_are_the_hand_and_library_values():
    table = judge_agreement(sample_table(), ["p", "q"])
    grades = matrix()
    for level in ("interval", "ordinal"):
        row = statistic(table, f"krippendorff_alpha_{level}")
        assert row["value"] == pytest.approx(krippendorff_alpha(grades, level))
        assert row["n"] == 12
    single, average = icc(grades)
    assert statistic(table, "icc_2_1")["value"] == pytest.approx(single)
    assert statistic(table, "icc_2_k")["value"] == pytest.approx(average)
    # ICC(2,1) by hand from the two-way ANOVA of the 12 x 2 table
    x = grades.T
    n, k = x.shape
    g = x.mean()
    msr = k * ((x.mean(1) - g) ** 2).sum() / (n - 1)
    msc = n * ((x.mean(0) - g) ** 2).sum() / (k - 1)
    mse = (((x - g) ** 2).sum() - msr * (n - 1) - msc * (k - 1)) / ((n - 1) * (k - 1))
    assert single == pytest.approx((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n))
    assert statistic(table, "quadratic_kappa")["value"] == pytest.approx(
        cohen_kappa_score(grades[0].astype(int), grades[1].astype(int), weights="quadratic", labels=[1, 2, 3, 4, 5])
    )
    # Kendall's tau between the model rankings: each judge's mean grade per model
    means = [[np.mean(GRADES[j][m]) for m in MODELS] for j in ("p", "q")]
    tau = statistic(table, "kendall_tau_ranking")
    assert tau["value"] == pytest.approx(kendalltau(*means).statistic)
    assert tau["n"] == 3
    assert set(table["rubric"]) == {"helpfulness"} and set(table["benchmark"]) == {"demo"}
    assert table["ci_low"].null_count() == table.height  # no bootstrap asked


def test_a_failed_grade_leaves_its_unit_out_of_the_complete_statistics():
    grades = {j: {m: list(v) for m, v in per.items()} for j, per in GRADES.items()}
    grades["q"]["m1"][0] = None
    table = judge_agreement(sample_table(grades), ["p", "q"])
    full = matrix(grades)
    assert statistic(table, "icc_2_1")["n"] == 11
    assert statistic(table, "krippendorff_alpha_interval")["value"] == pytest.approx(krippendorff_alpha(full))
    both = np.isfinite(full).all(axis=0)
    assert statistic(table, "quadratic_kappa")["value"] == pytest.approx(
        cohen_kappa_score(
            full[0, both].astype(int), full[1, both].astype(int), weights="quadratic", labels=[1, 2, 3, 4, 5]
        )
    )


def test_bootstrap_intervals_bracket_the_estimate_and_one_judge_has_no_agreement():
    boot = SimpleNamespace(resamples=200, confidence=0.95, seed=7)
    table = judge_agreement(sample_table(), ["p", "q"], boot)
    alpha = statistic(table, "krippendorff_alpha_interval")
    assert alpha["ci_low"] <= alpha["value"] <= alpha["ci_high"]
    assert judge_agreement(sample_table(), ["p"]).is_empty()


def lengths_of(tokens):
    return pl.DataFrame(
        [(m, "demo", s, tokens[m][i]) for m in MODELS for i, s in enumerate(IDS)],
        schema={"model": pl.String, "benchmark": pl.String, "id": pl.String, "tokens": pl.Int64},
        orient="row",
    )


def test_a_judge_whose_grade_follows_length_is_flagged():
    # judge "long" gives the grade of the answer's length rank; judge "fair" does not follow it
    tokens = {"m1": [10, 40, 70, 100], "m2": [20, 50, 80, 110], "m3": [30, 60, 90, 120]}
    by_length = {m: [1 + (t - 10) // 30 for t in tokens[m]] for m in MODELS}
    grades = {"long": by_length, "fair": {"m1": [3, 2, 3, 2], "m2": [2, 3, 2, 3], "m3": [3, 3, 2, 2]}}
    table = judge_bias(sample_table(grades), lengths_of(tokens), ["long", "fair"], {}, 0.5, 0.8)
    length = table.filter(pl.col("check") == "length_spearman")
    long, fair = (length.filter(pl.col("judge") == j).row(0, named=True) for j in ("long", "fair"))
    x = [t for m in MODELS for t in tokens[m]]
    assert long["value"] == pytest.approx(spearmanr([g for m in MODELS for g in by_length[m]], x).statistic)
    assert long["flagged"] is True and long["n"] == 12
    assert fair["flagged"] is False
    assert fair["value"] == pytest.approx(spearmanr([g for m in MODELS for g in grades["fair"][m]], x).statistic)


def test_self_preference_by_hand():
    # judge p is model m1: its grades of m1's answers minus q's: (5-4) + (4-4) + (4-5) + (3-3) = 0 over 4 -> 0;
    # judge q is of m3's family: (3-3) + (2-3) + (4-4) + (3-2) = 0; a third judge r makes the others' a mean
    grades = dict(GRADES, r={"m1": [1, 1, 1, 1], "m2": [2, 2, 2, 2], "m3": [5, 5, 5, 5]})
    tokens = {m: [10, 20, 30, 40] for m in MODELS}
    table = judge_bias(
        sample_table(grades), lengths_of(tokens), ["p", "q", "r"], {"p": ["m1"], "q": ["m3"], "r": ["m3"]}, 0.5, 0.8
    )
    pref = {
        (j, m): v
        for j, m, v in table.filter(pl.col("check") == "self_preference").select("judge", "model", "value").iter_rows()
    }
    hand_p = np.mean([5 - (4 + 1) / 2, 4 - (4 + 1) / 2, 4 - (5 + 1) / 2, 3 - (3 + 1) / 2])
    hand_r = np.mean([5 - (3 + 3) / 2, 5 - (3 + 2) / 2, 5 - (4 + 4) / 2, 5 - (2 + 3) / 2])
    assert pref[("p", "m1")] == pytest.approx(hand_p)
    assert pref[("r", "m3")] == pytest.approx(hand_r)
    assert set(pref) == {("p", "m1"), ("q", "m3"), ("r", "m3")}


def test_one_grade_for_most_answers_is_flagged():
    grades = {"stuck": {m: [4, 4, 4, 4] for m in MODELS}, "spread": GRADES["p"] | {}}
    grades["stuck"]["m2"] = [4, 4, 4, 1]  # 11 of 12 answers get a 4
    table = judge_bias(
        sample_table(grades), lengths_of({m: [1, 2, 3, 4] for m in MODELS}), ["stuck", "spread"], {}, 0.5, 0.8
    )
    modal = {
        j: (v, f)
        for j, v, f in table.filter(pl.col("check") == "modal_grade_share")
        .select("judge", "value", "flagged")
        .iter_rows()
    }
    assert modal["stuck"] == (pytest.approx(11 / 12), True)
    assert modal["spread"][1] is False
    shares = table.filter((pl.col("judge") == "stuck") & pl.col("check").str.starts_with("share_grade_"))
    assert shares["value"].to_list() == pytest.approx([1 / 12, 0, 0, 11 / 12, 0])


def test_answer_lengths_count_whitespace_tokens():
    generations = {("m1", "demo"): pl.DataFrame({"id": ["s1", "s2"], "output": ["a b  c\nd", None]})}
    assert answer_lengths(generations)["tokens"].to_list() == [4, 0]
