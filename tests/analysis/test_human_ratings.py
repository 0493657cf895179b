"""careval.analysis.jury.human_ratings and jury_stability: the ratings file's checks (one line naming file, line and
field), the raters' agreement and each metric's agreement with their mean, against hand layouts and the libraries."""

import numpy as np
import polars as pl
import pytest
from scipy.stats import spearmanr

from careval.analysis.jury.human_ratings import (
    HumanRatingsError,
    human_agreement,
    rater_agreement,
    read_human_ratings,
)
from careval.analysis.jury.jury_stability import jury_stability
from careval.analysis.statistics.reliability import icc, krippendorff_alpha
from careval.schemas import SUMMARY_SAMPLE_SCHEMA

MODELS = ["m1", "m2"]
IDS = {"demo": {"s1", "s2", "s3"}}
HEADER = "model,benchmark,id,criterion,rating,rater\n"
# rater -> (model, id) -> rating
RATINGS = {
    "ann": {("m1", "s1"): 5, ("m1", "s2"): 4, ("m1", "s3"): 2, ("m2", "s1"): 1, ("m2", "s2"): 3, ("m2", "s3"): 2},
    "bob": {("m1", "s1"): 4, ("m1", "s2"): 4, ("m1", "s3"): 3, ("m2", "s1"): 2, ("m2", "s2"): 2, ("m2", "s3"): 1},
}


def write(tmp_path, body, header=HEADER):
    path = tmp_path / "ratings.csv"
    path.write_text("# made-up ratings\n" + header + body)
    return path


def good_body():
    return "".join(f"{m},demo,{s},helpfulness,{v},{r}\n" for r, per in RATINGS.items() for (m, s), v in per.items())


def read(path):
    return read_human_ratings(path, MODELS, IDS, (1, 5))


@pytest.mark.parametrize(
    "row, field, why",
    [
        ("m9,demo,s1,helpfulness,3,ann", "model", "not an evaluated model"),
        ("m1,demo,s9,helpfulness,3,ann", "id", "not a sample id of demo"),
        ("m1,other,s1,helpfulness,3,ann", "benchmark", "not a benchmark"),
        ("m1,demo,s1,helpfulness,6,ann", "rating", "outside the declared range [1, 5]"),
        ("m1,demo,s1,helpfulness,good,ann", "rating", "not a number"),
        ("m1,demo,s1,helpfulness,3,", "rater", "empty"),
    ],
)
def test_a_bad_row_is_one_line_naming_file_line_and_field(tmp_path, row, field, why):
    path = write(tmp_path, "m1,demo,s2,helpfulness,3,ann\n" + row + "\n")
    with pytest.raises(HumanRatingsError) as error:
        read(path)
    message = str(error.value)
    # line 1 is the comment, 2 the header, 3 the good row, 4 the bad one
    assert message.startswith(f"{path}: line 4: field {field}: ") and why in message
    assert "\n" not in message


def test_a_missing_column_is_named(tmp_path):
    path = write(tmp_path, "m1,demo,s1,helpfulness,3\n", header="model,benchmark,id,criterion,rating\n")
    with pytest.raises(HumanRatingsError, match=r"ratings.csv: line 2: missing column rater"):
        read(path)


def test_one_rater_rating_one_answer_twice_differently_is_an_error_naming_both_lines(tmp_path):
    # averaged, 3 and 1 would be a 2 the rater never gave (issue 40: the raters' alpha moved from 0.896 to 0.860)
    path = write(tmp_path, good_body() + "m1,demo,s1,helpfulness,1,bob\n")
    with pytest.raises(HumanRatingsError) as error:
        read(path)
    # line 1 the comment, 2 the header, bob's first rating of (m1, s1) the 7th row (line 9), the new one line 15
    assert str(error.value) == (
        f"{path}: line 15: field rating: 1 conflicts with 4 on line 9: rater 'bob' rated m1's answer to demo s1 "
        "(helpfulness) twice; keep one rating"
    )


def test_the_same_row_twice_is_read_once(tmp_path):
    once = read(write(tmp_path, good_body()))
    (tmp_path / "ratings.csv").unlink()
    twice = read(write(tmp_path, good_body() + "m1,demo,s1,helpfulness,4,bob\n"))
    assert twice.equals(once) and once.height == 12
    # and not weighted twice in the raters' mean of that answer
    mean = human_mean(twice).filter((pl.col("model") == "m1") & (pl.col("id") == "s1"))["human"].item()
    assert mean == (RATINGS["ann"][("m1", "s1")] + RATINGS["bob"][("m1", "s1")]) / 2


def human_mean(ratings: pl.DataFrame) -> pl.DataFrame:
    return ratings.group_by("model", "id").agg(human=pl.col("rating").mean())


def test_a_spreadsheets_byte_order_mark_is_read_right(tmp_path):
    plain = read(write(tmp_path, good_body(), header=HEADER))
    path = tmp_path / "excel.csv"
    path.write_bytes(("\ufeff" + HEADER + good_body()).encode("utf-8"))  # Excel's "CSV UTF-8"
    assert read(path).equals(plain)


def test_raters_agreement_over_answers(tmp_path):
    ratings = read(write(tmp_path, good_body()))
    table = rater_agreement(ratings)
    # the hand layout: raters (ann, bob) x answers (m1 s1..s3, m2 s1..s3)
    units = [("m1", "s1"), ("m1", "s2"), ("m1", "s3"), ("m2", "s1"), ("m2", "s2"), ("m2", "s3")]
    grid = np.array([[RATINGS[r][u] for u in units] for r in ("ann", "bob")], dtype=float)
    values = dict(table.select("statistic", "value").iter_rows())
    assert values["krippendorff_alpha_interval"] == pytest.approx(krippendorff_alpha(grid, "interval"))
    assert values["krippendorff_alpha_ordinal"] == pytest.approx(krippendorff_alpha(grid, "ordinal"))
    assert (values["icc_2_1"], values["icc_2_k"]) == pytest.approx(icc(grid))
    assert table["raters"].unique().to_list() == ["ann | bob"] and table["n"].unique().to_list() == [6]


def test_each_metric_against_the_raters_mean(tmp_path):
    ratings = read(write(tmp_path, good_body()))
    units = [("m1", "s1"), ("m1", "s2"), ("m1", "s3"), ("m2", "s1"), ("m2", "s2"), ("m2", "s3")]
    rouge = [0.9, 0.2, 0.4, 0.1, 0.5, 0.3]
    perplexity = [2.0, 9.0, 4.0, 30.0, 5.0, 12.0]  # lower is better: agreement is read with the sign flipped
    rows = [(m, "demo", "open", "rougeL", s, v, "ok", 1.0) for (m, s), v in zip(units, rouge)]
    rows += [(m, "demo", "open", "word_perplexity", s, v, "ok", 1.0) for (m, s), v in zip(units, perplexity)]
    rows += [("m1", "demo", "open", "bleu", "s1", 0.0, "empty_output", 1.0)]
    samples = pl.DataFrame(rows, schema=SUMMARY_SAMPLE_SCHEMA, orient="row")
    table = human_agreement(samples, ratings)
    mean = [(RATINGS["ann"][u] + RATINGS["bob"][u]) / 2 for u in units]
    rho = {m: v for m, s, v in table.select("metric", "statistic", "value").iter_rows() if s == "spearman"}
    assert rho["rougeL"] == pytest.approx(spearmanr(rouge, mean).statistic)
    assert rho["word_perplexity"] == pytest.approx(spearmanr([-p for p in perplexity], mean).statistic)
    assert np.isnan(rho["bleu"])  # its only row is a failure: no value to agree, but it is listed
    assert table.filter(pl.col("metric") == "bleu")["n"].to_list() == [0, 0]
    z = lambda v: (np.asarray(v) - np.mean(v)) / np.std(v)  # noqa: E731
    icc_rouge = table.filter((pl.col("metric") == "rougeL") & (pl.col("statistic") == "icc_2_1_standardised"))
    assert icc_rouge["value"][0] == pytest.approx(icc(np.vstack([z(rouge), z(mean)]))[0])
    assert icc_rouge["n"][0] == 6


def test_jury_stability_compares_each_judge_with_the_jury():
    spread = pl.DataFrame(
        {
            "model": ["m1"] * 6,
            "benchmark": ["demo"] * 6,
            "id": ["s1", "s2"] * 3,
            "metric": ["judge_help", "judge_help", "judge_help@p", "judge_help@p", "judge_help@q", "rougeL"],
            "scaled_variance": [0.1, 0.3, 0.4, 0.4, 0.2, 0.9],
        }
    )
    table = jury_stability({"resilience": spread, "consistency": None})
    got = {
        r: (v, ratio, n)
        for r, v, ratio, n in table.select("rater", "mean_scaled_variance", "ratio_to_jury", "n").iter_rows()
    }
    assert got["jury"] == (pytest.approx(0.2), pytest.approx(1.0), 2)
    assert got["p"] == (pytest.approx(0.4), pytest.approx(2.0), 2)
    assert got["q"] == (pytest.approx(0.2), pytest.approx(1.0), 1)
    assert set(table["rubric"]) == {"help"} and set(table["kind"]) == {"grade"}
