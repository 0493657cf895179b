"""careval.jobs.jury_report and careval.jobs.jury: the jobs write every table from files, and a bad ratings file stops
the job with its one line."""

import math

import polars as pl
import pytest

from careval.analysis.jury.human_ratings import HumanRatingsError
from careval.jobs.jury import run_jury
from careval.jobs.jury_report import OUTPUTS, write_jury_report
from careval.schemas import JUDGE_SCORE_SCHEMA, SUMMARY_SAMPLE_SCHEMA
from careval.specs import Bootstrap, JuryJob, JuryReportJob

JOB = JuryReportJob(
    judges=("p", "q"),
    own_models={"p": ("m1",)},
    length_bias_flag=0.5,
    one_grade_flag=0.8,
    models=("m1", "m2"),
    rating_range=(1.0, 5.0),
    bootstrap=Bootstrap(resamples=20, confidence=0.9, seed=1),
)


@pytest.fixture
def inputs(tmp_path):
    grades = {"p": [5, 4, 2, 1, 3, 2], "q": [4, 4, 3, 1, 2, 2]}
    units = [("m1", "s1"), ("m1", "s2"), ("m1", "s3"), ("m2", "s1"), ("m2", "s2"), ("m2", "s3")]
    rows = [
        (m, "demo", "open", f"judge_help@{j}", s, float(g), "ok", 1.0)
        for j, values in grades.items()
        for (m, s), g in zip(units, values)
    ]
    rows += [(m, "demo", "open", "rougeL", s, 0.1 * k, "ok", 1.0) for k, (m, s) in enumerate(units)]
    samples = tmp_path / "sample_scores.parquet"
    pl.DataFrame(rows, schema=SUMMARY_SAMPLE_SCHEMA, orient="row").write_parquet(samples)
    generations = []
    for model in ("m1", "m2"):
        path = tmp_path / "generations" / model / "demo.parquet"
        path.parent.mkdir(parents=True)
        pl.DataFrame({"id": ["s1", "s2", "s3"], "output": ["a b", "a b c d", "a"]}).write_parquet(path)
        generations.append(str(path))
    dataset = tmp_path / "demo.parquet"
    pl.DataFrame({"id": ["s1", "s2", "s3"]}).write_parquet(dataset)
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "model,benchmark,id,criterion,rating,rater\n"
        + "".join(
            f"{m},demo,{s},help,{v},{r}\n"
            for r, off in (("ann", 0), ("bob", 1))
            for (m, s), v in zip(units, [5, 4, 2, 1, 3, 2])
            for v in [min(5, v + off)]
        )
    )
    return {"samples": str(samples), "generations": generations, "datasets": [str(dataset)], "ratings": str(ratings)}


def test_every_table_is_written(tmp_path, inputs):
    outputs = {key: tmp_path / "summary" / f"{key}.parquet" for key in OUTPUTS}
    write_jury_report(inputs, outputs, JOB)
    tables = {key: pl.read_parquet(path) for key, path in outputs.items()}
    alpha = tables["judge_agreement"].filter(pl.col("statistic") == "krippendorff_alpha_interval")
    assert alpha["judges"].to_list() == ["p | q"] and alpha["n"].to_list() == [6]
    assert tables["judge_bias"].filter(pl.col("check") == "self_preference")["model"].to_list() == ["m1"]
    assert tables["jury_stability"].is_empty()  # no repeats given
    assert set(tables["human_agreement"]["metric"]) == {"judge_help@p", "judge_help@q", "rougeL"}
    assert set(tables["human_rater_agreement"]["raters"]) == {"ann | bob"}


def test_a_bad_ratings_file_stops_the_job_with_its_line(tmp_path, inputs):
    with open(inputs["ratings"], "a") as handle:
        handle.write("m3,demo,s1,help,3,ann\n")
    outputs = {key: tmp_path / f"{key}.parquet" for key in OUTPUTS}
    with pytest.raises(HumanRatingsError, match=r"ratings.csv: line 14: field model: 'm3' is not an evaluated model"):
        write_jury_report(inputs, outputs, JOB)


def test_the_jury_job_writes_the_jury_beside_its_judges(tmp_path):
    paths = []
    for judge, value in (("p", 2.0), ("q", 5.0)):
        path = tmp_path / f"{judge}.parquet"
        pl.DataFrame(
            [{"id": "s1", "metric": "judge_help", "value": value, "status": "ok", "level": "sample", "weight": 1.0}],
            schema=JUDGE_SCORE_SCHEMA,
        ).write_parquet(path)
        paths.append(path)
    run_jury(paths, tmp_path / "judge.parquet", JuryJob(judges=("p", "q"), aggregate="median"))
    written = pl.read_parquet(tmp_path / "judge.parquet")
    assert dict(zip(written["metric"], written["value"])) == {
        "judge_help": 3.5,
        "judge_help@p": 2.0,
        "judge_help@q": 5.0,
    }
    assert not any(math.isnan(v) for v in written["value"])


@pytest.mark.parametrize(
    ("judges", "own", "says"),
    [
        # a jury of one that is itself an evaluated model: its grades of its own answers have no other judge's beside
        (("p",), {"p": ("m1",)}, "needs two judges"),
        (("p", "q"), {}, "no judge is an evaluated model"),
    ],
)
def test_the_self_preference_panel_says_why_it_is_empty(tmp_path, inputs, judges, own, says):
    """A jury of one said "no judge is an evaluated model" though its judge is one (issue 40)."""
    from dataclasses import replace

    from careval.analysis.figures.jury import judge_bias_figure

    outputs = {key: tmp_path / f"{key}.parquet" for key in OUTPUTS}
    write_jury_report(inputs, outputs, replace(JOB, judges=judges, own_models=own))
    bias = pl.read_parquet(outputs["judge_bias"])
    assert bias.filter(pl.col("check") == "self_preference").is_empty()
    figure = judge_bias_figure(bias, "demo")
    texts = [text.get_text() for text in figure.axes[1].texts]
    assert len(texts) == 1 and says in texts[0]


def test_a_bias_check_without_a_value_is_marked_n_a_not_drawn_as_zero():
    """Judge p's grades are all one grade (no rank correlation with length) and it has no other judge's grades of its
    model beside its own: both bars are "n/a" at their row; q's values of 0 are bars of 0, unmarked."""
    from careval.analysis.figures.jury import judge_bias_figure
    from careval.schemas import JUDGE_BIAS_SCHEMA

    nan = float("nan")
    rows = [  # judge, check, model, value
        ("p", "length_spearman", None, nan),
        ("q", "length_spearman", None, 0.0),
        ("p", "self_preference", "m1", nan),
        ("q", "self_preference", "m2", 0.0),
    ]
    keys = ("judge", "check", "model", "value")
    table = pl.DataFrame(
        [{"benchmark": "demo", "rubric": "help", "n": 3, **dict(zip(keys, row))} for row in rows],
        schema=JUDGE_BIAS_SCHEMA,
    )
    figure = judge_bias_figure(table, "demo")
    for ax in figure.axes[:2]:
        assert [(t.get_text().strip(), t.get_position()[1]) for t in ax.texts] == [("n/a", 0)]
