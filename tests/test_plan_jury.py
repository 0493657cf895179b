"""A jury in the plan: metrics.judge.models, each judge's job, the jury's job and report; one judge stays today's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def demo_raw() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def one_judge(raw: dict, name: str = "smollm2-135m-instruct") -> dict:
    raw["metrics"]["judge"].pop("models")
    raw["metrics"]["judge"]["model"] = name
    return raw


def test_the_demo_jury(demo_raw):
    plan = build_plan(demo_raw)
    assert list(plan.judges) == ["smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"]
    assert plan.judges["qwen2.5-coder-0.5b-instruct"] is plan.models["qwen2.5-coder-0.5b-instruct"]
    assert plan.jury_job().judges == tuple(plan.judges) and plan.jury_job().aggregate == "mean"
    report = plan.jury_report_job()
    # both judges are evaluated models: each one's self-preference is measured on its own answers
    assert report.own_models == {
        "smollm2-135m-instruct": ("smollm2-135m-instruct",),
        "qwen2.5-coder-0.5b-instruct": ("qwen2.5-coder-0.5b-instruct",),
    }
    assert (report.length_bias_flag, report.one_grade_flag) == (0.5, 0.8)
    names = plan.analysis.figure_names()
    for kind in ("jury", "judge_agreement", "judge_bias", "jury_stability"):
        assert f"{kind}_demo_open_qa" in names
    assert "human_agreement" in names


def test_one_judge_plans_exactly_todays_judge_job(demo_raw):
    """A config with `model:` keeps today's judge: the same job spec (so the same grades and no rerun), no jury."""
    single = build_plan(one_judge(demo_raw))
    assert single.judges == {} and single.judge.name == "smollm2-135m-instruct"
    job = single.judge_job()
    assert set(job.options) == {"rubrics", "retries", "max_new_tokens", "temperature", "top_p", "seed", "limit"}
    # each judge of a jury runs the very job it would run alone
    jury = build_plan(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    assert jury.judge_job(judge="smollm2-135m-instruct") == job
    assert jury.judge_job(repeats=True, judge="smollm2-135m-instruct") == single.judge_job(repeats=True)
    assert not any(f.kind in ("jury", "judge_agreement", "judge_bias") for f in single.analysis.figures)


def test_same_family_and_inline_judges(demo_raw, tmp_path):
    folder = tmp_path / "judge-7b"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # a model folder (the plan checks no more of it)
    demo_raw["metrics"]["judge"]["models"].append({"source": f"local:{folder}", "gpus": 0})
    demo_raw["metrics"]["judge"]["same_family"] = {"judge-7b": ["gemma3-270m"]}
    plan = build_plan(demo_raw)
    assert list(plan.judges)[-1] == "judge-7b" and "judge-7b" not in plan.models
    assert plan.entries["judge-7b"]["source"] == f"local:{folder}"
    assert plan.loaded_model("judge-7b") is plan.judges["judge-7b"]
    assert plan.jury_report_job().own_models["judge-7b"] == ("gemma3-270m",)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda j: j.update(model="gemma3-270m"), "metrics.judge"),
        (lambda j: j.update(models=["nobody"]), "metrics.judge.models[0]: 'nobody' is not a key of `models`"),
        (
            lambda j: j["models"].append("smollm2-135m-instruct"),
            "metrics.judge.models[2]: judge 'smollm2-135m-instruct' is listed twice",
        ),
        (
            lambda j: j.update(same_family={"gemma3-270m": []}),
            "metrics.judge.same_family: 'gemma3-270m' is not a judge",
        ),
        (
            lambda j: j.update(same_family={"smollm2-135m-instruct": ["gpt-9"]}),
            "metrics.judge.same_family.smollm2-135m-instruct: gpt-9",
        ),
        (lambda j: j.update(aggregate="mode"), "metrics.judge.aggregate"),
    ],
)
def test_jury_config_errors_are_one_line(demo_raw, mutate, message):
    mutate(demo_raw["metrics"]["judge"])
    with pytest.raises(ConfigError) as error:
        build_plan(demo_raw)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_paper_configs_documented_jury_plans():
    """config/paper.yaml keeps one Prometheus judge; its commented jury, uncommented, is a valid plan."""
    text = (REPO / "config" / "paper.yaml").read_text()
    assert build_plan(yaml.safe_load(text)).judges == {}
    start = text.index("    # models:\n")
    block = text[start : text.index("\n  relaxed_perplexity:", start)]
    # each line "    # <yaml>": drop the indent and the comment mark
    lines = [line[len("    # ") :] for line in block.splitlines() if line.startswith("    # ")]
    jury = yaml.safe_load("\n".join(lines))
    raw = yaml.safe_load(text)
    raw["metrics"]["judge"].pop("model")
    raw["metrics"]["judge"].update(jury)
    plan = build_plan(raw)
    assert list(plan.judges) == ["prometheus-7b-v2.0", "prometheus-8x7b-v2.0", "Llama-3.1-8B-Instruct"]
    assert plan.judges["prometheus-8x7b-v2.0"].gpus == raw["model_sizes"]["medium"]["gpus"]
    assert plan.jury_report_job().own_models["Llama-3.1-8B-Instruct"] == ("Meta-Llama-3.1-8B-Instruct",)
