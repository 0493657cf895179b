"""The judge on repeats (issue 12 item 1): every rephrasing / sampled answer graded with the answer's own prompt and reference."""

import math

import polars as pl
from prometheus_eval.parser import parse_output

from careval.analysis.jury.repeat_judge import judge_repeats
from careval.analysis.statistics.spread import REPEAT_SCORE_SCHEMA, per_sample_spread
from support.fake_backends import GenerationOnly


class GradeByResponse(GenerationOnly):
    """A judge whose verdict is the response's first character ("[RESULT] n"), garbage for "?"; records prompts."""

    def __init__(self):
        self.prompts = []

    def generate(self, prompts, sampling, instruction=None):
        self.prompts += prompts
        outputs = []
        for prompt in prompts:
            response = prompt.split("###Response to evaluate:\n", 1)[1].split("\n", 1)[0]
            outputs.append("No idea." if response.startswith("?") else f"Feedback: fine. [RESULT] {response[0]}")
        return outputs


def frames():
    samples = pl.DataFrame({"id": ["a", "b", "c"], "reference": ["ref a", "ref b", "ref c"]})
    generations = pl.DataFrame(
        {"id": ["a", "b", "c"], "prompt": ["Qa?", "Qb?", "Qc?"], "output": ["5", "4", "3"], "status": ["ok"] * 3}
    )
    repeats = pl.DataFrame(
        {
            "id": ["a", "a", "b", "b", "c", "c"],
            "repeat": [0, 1, 0, 1, 0, 1],
            "output": ["5 x", "3 y", "? z", "", "2", "1"],
            "status": ["ok", "ok", "ok", "empty_output", "ok", "ok"],
        }
    )
    return samples, generations, repeats


def test_every_repeat_graded_with_its_samples_prompt_and_reference():
    samples, generations, repeats = frames()
    judge = GradeByResponse()
    scores = judge_repeats(judge, samples, generations, repeats, {"rubrics": ["helpfulness"], "retries": 0})
    assert scores.schema == pl.Schema(REPEAT_SCORE_SCHEMA)
    grades = scores.filter(pl.col("metric") == "judge_helpfulness")
    got = {(r["id"], r["repeat"]): (r["value"], r["status"]) for r in grades.iter_rows(named=True)}
    # a judge without log-probabilities: the expected scores are counted as such, never a number
    expected = scores.filter(pl.col("metric") == "judge_helpfulness_expected")
    assert expected.height == 6 and set(expected.filter(pl.col("id") != "b")["status"]) == {"no_logprobs"}
    assert got[("a", 0)] == (5.0, "ok") and got[("a", 1)] == (3.0, "ok")
    assert got[("c", 0)] == (2.0, "ok") and got[("c", 1)] == (1.0, "ok")
    assert math.isnan(got[("b", 0)][0]) and got[("b", 0)][1] == "parse_error"
    assert math.isnan(got[("b", 1)][0]) and got[("b", 1)][1] == "empty_output"  # never sent to the judge
    assert len(judge.prompts) == 5
    # the instruction is the prompt the model answered, the reference the sample's own
    first = next(p for p in judge.prompts if "###Response to evaluate:\n3 y" in p)
    assert "###The instruction to evaluate:\nQa?\n" in first and "###Reference Answer (Score 5):\nref a" in first
    # parse_output is prometheus-eval's own parser: what the fake writes parses as the number it wrote
    assert parse_output("Feedback: fine. [RESULT] 3", mode="absolute")[1] == 3
    # the spread over repeats of a's two grades: mean 4, population variance 1
    spread = {r["id"]: r for r in per_sample_spread(grades).iter_rows(named=True)}
    assert spread["a"]["mean"] == 4.0 and spread["a"]["variance"] == 1.0


def test_limit_bounds_by_samples_each_with_all_repeats():
    samples, generations, repeats = frames()
    judge = GradeByResponse()
    scores = judge_repeats(judge, samples, generations, repeats, {"rubrics": ["honesty"], "retries": 0, "limit": 2})
    assert sorted(set(zip(scores["id"], scores["repeat"]))) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert len(judge.prompts) == 3  # a0, a1, b0 (b1 is empty)


def test_nothing_to_grade_loads_no_judge():
    samples, generations, repeats = frames()
    repeats = repeats.with_columns(status=pl.lit("empty_output"))

    def factory():
        raise AssertionError("the judge must not be loaded")

    scores = judge_repeats(factory, samples, generations, repeats, {"rubrics": ["honesty"]})
    assert scores.height == 12 and set(scores["status"]) == {"empty_output"}  # a grade and an expected row each
