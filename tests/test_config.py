"""The config schema: defaults are filled, and a bad or unknown key is one line naming it."""

import copy

import pytest

from careval.config import ConfigError, prepare_config


def test_demo_config_is_valid_and_defaults_are_filled(demo_config):
    assert demo_config["generation"]["top_p"] == 1.0
    assert demo_config["limit"] is None
    assert all(entry["backend"] in ("hf", "vllm") for entry in demo_config["models"].values())


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda c: c.update(genration={"max_new_tokens": 3}), "'genration'"),
        (lambda c: c["generation"].update(max_new_token=3), "'generation.max_new_token'"),
        (lambda c: next(iter(c["models"].values())).update(chat_templte=True), "chat_templte"),
        (lambda c: c["benchmarks"].update(demo_mcqa={"limt": 3}), "'benchmarks.demo_mcqa.limt'"),
    ],
)
def test_unknown_key_is_named_in_one_line(demo_config, mutate, key):
    config = copy.deepcopy(demo_config)
    mutate(config)
    with pytest.raises(ConfigError) as error:
        prepare_config(config)
    message = str(error.value)
    assert key in message and "unknown config key" in message
    assert "\n" not in message


def test_bad_value_names_the_key(demo_config):
    config = copy.deepcopy(demo_config)
    config["generation"]["top_p"] = 1.5
    with pytest.raises(ConfigError, match=r"'generation.top_p'"):
        prepare_config(config)


def test_bad_model_source_names_the_key(demo_config):
    config = copy.deepcopy(demo_config)
    name = next(iter(config["models"]))
    config["models"][name]["source"] = "s3:bucket/model"
    with pytest.raises(ConfigError, match=rf"'models.{name}.source'"):
        prepare_config(config)


def test_metrics_skip_takes_the_registrys_families(demo_config):
    from careval.metrics.registry import FAMILIES

    config = copy.deepcopy(demo_config)
    config["metrics"]["skip"] = list(FAMILIES)
    assert prepare_config(config)["metrics"]["skip"] == list(FAMILIES)
    config["metrics"]["skip"] = ["rouge", "rouge4"]
    with pytest.raises(ConfigError, match=r"'metrics.skip.1'.*'rouge4' is not one of"):
        prepare_config(config)
