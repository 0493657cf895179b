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


@pytest.mark.parametrize(
    "text, message",
    [
        ("limit: 2\nmodels: {}\nlimit: 3\n", "c.yaml:3: duplicated key 'limit' (first at line 1)"),
        (
            "benchmarks:\n  demo_mcqa:\nmetrics:\n  judge:\n    retries: 1\n    retries: 2\nbenchmarks:\n  demo_note:\n",
            "c.yaml:6: duplicated key 'metrics.judge.retries' (first at line 5)",  # the first in the file
        ),
        (
            "careqa:\n  editions:\n    - {year: 2024, year: 2023}\n",
            "c.yaml:3: duplicated key 'careqa.editions[0].year'",
        ),
    ],
)
def test_a_key_written_twice_is_an_error_naming_file_line_and_key(tmp_path, text, message):
    from careval.config import read_config_file

    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        read_config_file(path)
    assert str(error.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(error.value)


def test_the_shipped_configs_have_no_key_twice(repo_root):
    from careval.config import read_config_file

    for path in sorted((repo_root / "config").glob("*.yaml")):
        assert read_config_file(path)["models"], path
