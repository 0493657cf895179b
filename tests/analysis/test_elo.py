"""The Elo CSV: comments and extra columns allowed, every malformation a one-line error naming file and line."""

import pytest

from careval.analysis.elo import EloFileError, read_elo, resolve_elo_path


def test_reads_model_and_elo_with_comments_and_extra_columns(tmp_path):
    path = tmp_path / "elo.csv"
    path.write_text("# made up\nrank,model,elo\n1,big-model,1250.5\n\n2,small-model,1101\n")
    assert read_elo(path) == {"big-model": 1250.5, "small-model": 1101.0}


@pytest.mark.parametrize(
    "text, message",
    [
        ("model,score\na,1\n", "elo.csv:1: header lacks column(s) elo"),
        ("model,elo\na,12x\n", "elo.csv:2: Elo '12x' of model 'a' is not a number"),
        ("model,elo\na,1\na,2\n", "elo.csv:3: model 'a' appears twice"),
        ("model,elo\nonly-a-name\n", "elo.csv:2: expected 2 columns, got 1"),
        ("# nothing\n", "elo.csv: no header line"),
    ],
)
def test_malformed_csv_is_one_clear_line(tmp_path, text, message):
    path = tmp_path / "elo.csv"
    path.write_text(text)
    with pytest.raises(EloFileError) as error:
        read_elo(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(EloFileError, match="cannot read the Elo CSV"):
        read_elo(tmp_path / "absent.csv")


def test_demo_csv_covers_the_demo_models_and_says_it_is_made_up(demo_config):
    path = resolve_elo_path(demo_config["analysis"]["elo_csv"])
    assert set(read_elo(path)) == set(demo_config["models"])
    assert "MADE-UP DEMO VALUES" in path.read_text()
