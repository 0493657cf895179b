"""The Prometheus judge: prometheus-eval's prompt and parser, the retry loop, statuses and the score layout."""

from __future__ import annotations

import copy
import math

import polars as pl
import pytest
from prometheus_eval import prompts as pe_prompts

from careval.backends.base import Sampling
from careval.config import ConfigError, prepare_config
from careval.metrics.judge import (
    JudgeConfigError,
    backend_generate,
    grade_with_retries,
    judge_prompt,
    parse_verdict,
    rubric_text,
    score_judge,
)
from careval.schemas import SCORE_SCHEMA
from support.fake_backends import GenerationOnly

# ---------------------------------------------------------------- prompts


def test_prompt_is_prometheus_absolute_template_with_reference_filled_by_hand():
    rubric = pe_prompts.HELPFULNESS_RUBRIC
    expected = pe_prompts.ABSOLUTE_PROMPT
    for placeholder, value in [
        ("{instruction}", "What lowers fever?"),
        ("{response}", "Paracetamol."),
        ("{reference_answer}", "Paracetamol or ibuprofen."),
        ("{rubric}", rubric),
    ]:
        assert expected.count(placeholder) == 1
        expected = expected.replace(placeholder, value)
    prompt = judge_prompt("What lowers fever?", "Paracetamol.", "Paracetamol or ibuprofen.", rubric)
    assert prompt == expected
    # the with-reference variant, ending where the judge starts writing
    assert (
        "###Reference Answer (Score 5):\nParacetamol or ibuprofen.\n\n###Score Rubrics:\n[Does the model provide"
        in prompt
    )
    assert prompt.endswith("###Feedback: ")


def test_prompt_keeps_braces_in_the_texts():
    prompt = judge_prompt("Dose {mg}?", "5 {mg}", "{x}", "[c]")
    assert "Dose {mg}?" in prompt and "5 {mg}" in prompt


def test_predefined_and_custom_rubrics():
    assert rubric_text("factual_validity") == ("factual_validity", pe_prompts.FACTUAL_VALIDITY_RUBRIC)
    custom = {
        "name": "safety",
        "criteria": "Is the advice safe?",
        **{f"score{i}_description": f"level {i}" for i in range(1, 6)},
    }
    by_hand = "[Is the advice safe?]\n" + "\n".join(f"Score {i}: level {i}" for i in range(1, 6))
    assert rubric_text(custom) == ("safety", by_hand)
    with pytest.raises(JudgeConfigError, match="'kindness'"):
        rubric_text("kindness")
    with pytest.raises(JudgeConfigError, match="score5_description"):
        rubric_text({k: v for k, v in custom.items() if k != "score5_description"})


# ---------------------------------------------------------------- parser


@pytest.mark.parametrize(
    "output, score, feedback",
    [
        ("The answer is correct and complete. [RESULT] 4", 4, "The answer is correct and complete."),
        ("Clear.\n[RESULT] 5\n", 5, "Clear."),
        ("Vague. [RESULT] (2)", 2, "Vague."),
        ("Feedback: fine. [RESULT] 3/5", 3, "Feedback: fine."),
        (
            "Partly right, so a score of 3",
            3,
            "Partly right, so a score of 3",
        ),  # prometheus-eval also reads "score of n"
    ],
)
def test_parser_reads_the_final_score(output, score, feedback):
    assert parse_verdict(output) == (score, feedback)


@pytest.mark.parametrize(
    "output",
    [
        "The response is accurate and well written.",  # no [RESULT]
        "Good. [RESULT] 7",  # out of range
        "Bad. [RESULT] 0",
        "Good. [RESULT] 4\nI hope this feedback helps!",  # extra text after the score
        "[RESULT] excellent",
        "",
        None,
    ],
)
def test_parser_rejects(output):
    assert parse_verdict(output) == (None, None)


# ---------------------------------------------------------------- retries


class ScriptedJudge:
    """Answers each prompt with the next output of its script; records every call."""

    def __init__(self, scripts: dict[str, list[str]]):
        self.scripts = {prompt: list(outputs) for prompt, outputs in scripts.items()}
        self.calls: list[tuple[list[str], int]] = []

    def __call__(self, prompts: list[str], attempt: int) -> list[str]:
        self.calls.append((list(prompts), attempt))
        return [self.scripts[p].pop(0) for p in prompts]


def test_retry_until_parseable():
    judge = ScriptedJudge({"a": ["no score", "still none", "ok now [RESULT] 2"], "b": ["fine [RESULT] 5"]})
    verdicts = grade_with_retries(["a", "b"], judge, retries=3)
    assert [(v.score, v.status, v.attempts) for v in verdicts] == [(2.0, "ok", 3), (5.0, "ok", 1)]
    assert verdicts[0].feedback == "ok now"
    # only the failing prompt is asked again, with the attempt number
    assert judge.calls == [(["a", "b"], 0), (["a"], 1), (["a"], 2)]


@pytest.mark.parametrize("retries", [0, 1, 4])
def test_always_unparseable_is_nan_parse_error_after_retries_plus_one_attempts(retries):
    judge = ScriptedJudge({"a": ["blah"] * 10, "b": ["[RESULT] 1"]})
    verdicts = grade_with_retries(["a", "b"], judge, retries=retries)
    assert math.isnan(verdicts[0].score) and verdicts[0].status == "parse_error" and verdicts[0].attempts == retries + 1
    assert verdicts[0].output == "blah"
    assert (verdicts[1].score, verdicts[1].status) == (1.0, "ok")
    assert [attempt for _, attempt in judge.calls] == list(range(retries + 1))


def test_each_attempt_samples_with_its_own_seed():
    class Recorder:
        def __init__(self):
            self.samplings: list[Sampling] = []

        def generate(self, prompts, sampling, instruction=None):
            self.samplings.append(sampling)
            return ["no verdict"] * len(prompts)

    backend = Recorder()
    settings = {"max_new_tokens": 50, "temperature": 1.0, "top_p": 0.9, "seed": 7}
    grade_with_retries(["p"], backend_generate(backend, settings), retries=2)
    assert [s.seed for s in backend.samplings] == [7, 8, 9]
    assert {(s.max_new_tokens, s.temperature, s.top_p) for s in backend.samplings} == {(50, 1.0, 0.9)}


# ---------------------------------------------------------------- job level


class FakeBackend(GenerationOnly):
    """A judge that grades by the response: "[RESULT] n" for a response "n ...", garbage for "?"."""

    def __init__(self):
        self.prompts: list[str] = []
        self.calls = 0

    def generate(self, prompts, sampling, instruction=None):
        self.calls += 1
        self.prompts += prompts
        outputs = []
        for prompt in prompts:
            response = prompt.split("###Response to evaluate:\n", 1)[1].split("\n", 1)[0]
            outputs.append("I cannot decide." if response.startswith("?") else f"Feedback. [RESULT] {response[0]}")
        return outputs


@pytest.fixture
def frames():
    samples = pl.DataFrame(
        {"id": ["s1", "s2", "s3", "s4", "s5"], "reference": ["ref one", "ref two", "ref three", None, "ref five"]}
    )
    generations = pl.DataFrame(
        {
            "id": ["s1", "s2", "s3", "s4", "s5"],
            "prompt": [f"Question {i}?" for i in range(1, 6)],
            "output": ["4 good", "? odd", "", "5 great", "2 poor"],
            "status": ["ok", "ok", "empty_output", "ok", "ok"],
        }
    )
    return samples, generations


def test_score_judge_rows_statuses_and_layout(frames):
    samples, generations = frames
    backend = FakeBackend()
    options = {"rubrics": ["helpfulness", "factual_validity"], "retries": 1, "max_new_tokens": 16}
    scores = score_judge(backend, samples, generations, options)
    assert scores.schema == pl.Schema(
        {**SCORE_SCHEMA, "p1": pl.Float64, "p2": pl.Float64, "p3": pl.Float64, "p4": pl.Float64, "p5": pl.Float64}
    )
    assert set(scores["level"]) == {"sample"} and set(scores["weight"]) == {1.0}
    got = {(r["id"], r["metric"]): (r["value"], r["status"]) for r in scores.iter_rows(named=True)}
    assert len(got) == scores.height == 20
    # this judge has no log-probabilities (no format/loglikelihood): parse + retries only, and so marked
    assert scores.select("p1", "p2", "p3", "p4", "p5").null_count().row(0) == (20,) * 5
    for metric in ("judge_helpfulness", "judge_factual_validity"):
        expected = f"{metric}_expected"
        assert got["s1", metric] == (4.0, "ok")
        assert got["s5", metric] == (2.0, "ok")
        assert math.isnan(got["s2", metric][0]) and got["s2", metric][1] == "parse_error"
        assert math.isnan(got["s3", metric][0]) and got["s3", metric][1] == "empty_output"
        assert math.isnan(got["s4", metric][0]) and got["s4", metric][1] == "no_reference"
        for sample in ("s1", "s2", "s5"):
            assert math.isnan(got[sample, expected][0]) and got[sample, expected][1] == "no_logprobs"
        assert got["s3", expected][1] == "empty_output" and got["s4", expected][1] == "no_reference"
    # 3 gradable samples x 2 rubrics asked once, then s2's two prompts once more
    assert backend.calls == 2 and len(backend.prompts) == 8
    assert all(pe_prompts.HELPFULNESS_RUBRIC in p or pe_prompts.FACTUAL_VALIDITY_RUBRIC in p for p in backend.prompts)
    assert (
        "###The instruction to evaluate:\nQuestion 1?\n\n###Response to evaluate:\n4 good\n\n###Reference Answer (Score 5):\nref one"
        in backend.prompts[0]
    )


def test_score_judge_limit_and_greedy_skips_retries(frames):
    samples, generations = frames
    backend = FakeBackend()
    scores = score_judge(
        backend, samples, generations, {"rubrics": ["honesty"], "retries": 5, "temperature": 0.0, "limit": 2}
    )
    assert scores["id"].to_list() == ["s1", "s1", "s2", "s2"]
    assert scores["status"].to_list() == ["ok", "no_logprobs", "parse_error", "no_logprobs"]
    assert backend.calls == 1  # greedy: a retry would repeat the same output


def test_no_judge_is_loaded_when_nothing_is_gradable(frames):
    samples, generations = frames

    def factory():
        raise AssertionError("the judge must not be loaded")

    failed = generations.with_columns(status=pl.lit("empty_output"))
    scores = score_judge(factory, samples, failed, {"rubrics": ["reasoning"]})
    assert scores["status"].to_list() == ["empty_output"] * 10 and scores["value"].is_nan().all()


# ---------------------------------------------------------------- judge model and config


def test_demo_config_judge_section(demo_config):
    judge = demo_config["metrics"]["judge"]
    # the demo's jury: each judge a model of the run (a single `model:` stays valid: tests/test_plan_jury.py)
    assert judge["models"] and all(name in demo_config["models"] for name in judge["models"])
    assert judge["top_p"] == 0.9 and judge["temperature"] == 1.0  # prometheus-eval's defaults, filled by the schema


@pytest.mark.parametrize(
    "judge",
    [
        {"model": "m", "rubrics": ["kindness"]},
        {"model": {"source": "pypi:some-model==1.0"}},  # a PyPI judge must be listed under models
        {"model": "m", "retries": -1},
        {
            "model": "smollm2-135m-instruct",
            "rubrics": [
                {"name": "safety_expected", "criteria": "Safe?", **{f"score{i}_description": "x" for i in range(1, 6)}}
            ],
        },
        {"rubrics": ["helpfulness"]},
    ],
)
def test_bad_judge_config_is_one_line(demo_config, judge):
    config = copy.deepcopy(demo_config)
    config["metrics"]["judge"] = judge
    with pytest.raises(ConfigError, match=r"metrics\.judge"):
        prepare_config(config)


# ---------------------------------------------------------------- a real judge


@pytest.mark.slow
def test_real_small_judge_always_gives_a_grade(demo_model_dirs, demo_config, capsys):
    from dataclasses import replace

    from careval.backends import load_backend
    from careval.backends.chat import format_prompt
    from careval.models.spec import model_spec

    name = "smollm2-135m-instruct"
    spec = model_spec(name, demo_config["models"][name], models_dir=demo_model_dirs[name].parent)
    backend = load_backend(replace(spec.for_job(), system_prompt=pe_prompts.ABS_SYSTEM_PROMPT))
    # prometheus-eval's system prompt reaches the model through its chat template
    assert pe_prompts.ABS_SYSTEM_PROMPT in format_prompt(backend.tokenizer, "x", True, backend.system_prompt)
    samples = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "reference": [
                "Intramuscular adrenaline (epinephrine) into the outer thigh.",
                "Metformin reduces glucose production by the liver.",
                "Sudden facial drooping, arm weakness and slurred speech; call emergency services.",
            ],
        }
    )
    generations = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "prompt": [
                "What is the first-line treatment for anaphylaxis?",
                "How does metformin lower blood glucose?",
                "What are the warning signs of a stroke?",
            ],
            "output": ["Give adrenaline intramuscularly.", "It makes the pancreas secrete more insulin.", "Headache."],
            "status": ["ok"] * 3,
        }
    )
    scores = score_judge(
        backend, samples, generations, {"rubrics": ["helpfulness"], "retries": 1, "max_new_tokens": 48}
    )
    assert scores.height == 6
    for row in scores.iter_rows(named=True):
        # an hf judge always grades: parsed, or read from its own score distribution
        if row["metric"] == "judge_helpfulness":
            assert row["status"] in ("ok", "from_distribution") and row["value"] in {1.0, 2.0, 3.0, 4.0, 5.0}
        else:
            assert row["status"] == "ok" and 1.0 <= row["value"] <= 5.0
        assert sum(row[f"p{s}"] for s in range(1, 6)) == pytest.approx(1.0)
    log = capsys.readouterr().out
    assert "judge_helpfulness: statuses" in log
    with capsys.disabled():
        print(f"\nsmall judge: {dict(scores['status'].value_counts().rows())}; values {scores['value'].to_list()}")
