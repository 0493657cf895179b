"""The Elo CSV is checked against the configured models once, at plan time: a misspelt name is an error, others are counted."""

import pytest

from careval.analysis.elo import EloFileError, check_elo

MODELS = ["llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "qwen2.5-7b-instruct"]


def _csv(tmp_path, body):
    path = tmp_path / "elo.csv"
    path.write_text("# arena export\nmodel,elo\n" + body, encoding="utf-8")
    return path


def test_names_outside_the_config_are_counted_with_the_configured_models_lacking_one(tmp_path):
    path = _csv(tmp_path, "llama-3.1-8b-instruct,1176\nllama-3.1-70b-instruct,1248\ngpt-4o-2024-05-13,1285\n")
    check = check_elo(path, MODELS)
    assert check.scores == {"llama-3.1-8b-instruct": 1176.0, "llama-3.1-70b-instruct": 1248.0}
    assert (check.unknown, check.missing) == (["gpt-4o-2024-05-13"], ["qwen2.5-7b-instruct"])
    assert check.warning() == (
        "1 Elo CSV model(s) not in the config, ignored: gpt-4o-2024-05-13; "
        "1 configured model(s) without an Elo, not in the Elo figure: qwen2.5-7b-instruct"
    )


def test_everything_matching_gives_no_warning(tmp_path):
    path = _csv(tmp_path, "".join(f"{m},{1000 + i}\n" for i, m in enumerate(MODELS)))
    assert check_elo(path, MODELS).warning() is None


@pytest.mark.parametrize(
    "written, meant",
    [
        ("llama-3.1-70B-instruct", "llama-3.1-70b-instruct"),  # case
        ("qwen-2.5-7b-instruct", "qwen2.5-7b-instruct"),  # a character added
        ("QWEN2.5-7B-INSTRUCT", "qwen2.5-7b-instruct"),  # all case: too far for difflib, same name folded
    ],
)
def test_a_misspelt_model_name_is_an_error_naming_both(tmp_path, written, meant):
    rows = [f"{m},1100\n" for m in MODELS if m != meant] + [f"{written},1200\n"]
    path = _csv(tmp_path, "".join(rows))
    with pytest.raises(EloFileError) as error:
        check_elo(path, MODELS)
    assert (
        str(error.value)
        == f"{path}: model '{written}' is not in the config; did you mean '{meant}'? (it has no Elo otherwise)"
    )


def test_a_csv_matching_no_configured_model_is_an_error(tmp_path):
    path = _csv(tmp_path, "gpt-4o-2024-05-13,1285\nclaude-3-opus,1248\n")
    with pytest.raises(EloFileError) as error:
        check_elo(path, MODELS)
    assert str(error.value) == (
        f"{path}: none of its 2 models is in the config "
        "(config models: llama-3.1-8b-instruct, llama-3.1-70b-instruct, qwen2.5-7b-instruct)"
    )


def test_a_malformed_csv_is_found_at_plan_time(tmp_path):
    path = _csv(tmp_path, "llama-3.1-8b-instruct,11x6\n")
    with pytest.raises(EloFileError) as error:
        check_elo(path, MODELS)
    assert str(error.value) == f"{path}:3: Elo '11x6' of model 'llama-3.1-8b-instruct' is not a number"


def test_the_demo_csv_matches_the_demo_config(demo_config):
    check = check_elo(demo_config["analysis"]["elo_csv"], list(demo_config["models"]))
    assert check.warning() is None and len(check.scores) == 3
