"""The studies checked at the door (careval.plan.study_checks), through the config's one entry point (careval.plan.build_plan):
each mistake one whole line naming the study, the key and the cause, before any variant is planned (issue 46)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[1]
SMOL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def demo_raw() -> dict:
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw.pop("studies", None)
    return raw


def line_of(raw: dict, study: dict) -> str:
    config = copy.deepcopy(raw)
    config["studies"] = {"x": study}
    with pytest.raises(ConfigError) as error:
        build_plan(config)
    return str(error.value)


@pytest.mark.parametrize(
    ("study", "line"),
    [
        pytest.param(
            {"sweep": {"modle": {"chat_template": [False, True]}}},
            "studies.x.sweep: 'modle' is not a section a study sweeps (did you mean 'model'? sections: model, models, "
            "benchmark, generation, analysis.resilience, metrics.<family>)",
            id="unknown section (was: a bad name, 'may hold only letters, digits')",
        ),
        pytest.param(
            {"sweep": {"model": {}}},
            "studies.x.sweep.model: no setting to sweep (e.g. chat_template: [false, true])",
            id="a section with no setting (was: the schema's 'is not valid under any of the given schemas')",
        ),
        pytest.param(
            {"sweep": {"model": {"chat_template": []}}},
            "studies.x.sweep.model.chat_template: no values to sweep (e.g. chat_template: [false, true])",
            id="a setting with no values (was: the schema's 'is not valid under any of the given schemas')",
        ),
        pytest.param(
            {"sweep": {"model": {"chat_template": True}}},
            "studies.x.sweep.model.chat_template: give the values as a list or as a mapping name -> value, not bool "
            "(e.g. chat_template: [false, true])",
            id="a value that is no list",
        ),
        pytest.param(
            {"sweep": {"generation": {"seed": [1, 2]}}},
            "studies.x.sweep.generation.seed: changes no value: every variant decodes greedily (generation.temperature "
            "0), which never draws from the seed; sweep it with a temperature above 0",
            id="a seed at temperature 0 (was: accepted, 20 jobs equal to the baseline)",
        ),
        pytest.param(
            {"models": [SMOL], "sweep": {"model": {"chat_template": [True]}}},
            f"studies.x.sweep.model: every value is the run's own setting of {SMOL} (chat_template=true): no variant "
            "differs from the baseline",
            id="a variant equal to the baseline (was: 'no benchmark of this run is compared')",
        ),
        pytest.param(
            {"models": [SMOL], "benchmarks": ["demo_mcqa"], "sweep": {"model": {"chat_template": [True]}}},
            f"studies.x.sweep.model: every value is the run's own setting of {SMOL} (chat_template=true): no variant "
            "differs from the baseline",
            id="the same with its benchmarks named (was: 'its only variant is the run's own setting')",
        ),
        pytest.param(
            {"sweep": {"models": {}}},
            "studies.x.sweep.models: no model to put in place (a list of names of `models`)",
            id="no other model",
        ),
    ],
)
def test_a_study_mistake_is_one_line_naming_study_key_and_cause(demo_raw, study, line):
    assert line_of(demo_raw, study) == line


def test_a_seed_swept_with_a_sampled_temperature_is_a_study(demo_raw):
    """The seed changes values where some variant samples: the check refuses only the greedy case."""
    config = copy.deepcopy(demo_raw)
    config["studies"] = {"x": {"sweep": {"generation": {"temperature": [0.0, 0.7], "seed": [1, 2]}}}}
    plan = build_plan(config)
    assert "temperature=0.7,seed=2" in plan.studies["x"].swept or "seed=2,temperature=0.7" in plan.studies["x"].swept
