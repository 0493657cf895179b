"""The Elo CSV: comments and extra columns allowed, every malformation a one-line error naming file and line."""

import pytest

from careval.analysis.elo import EloFileError, check_elo, read_elo, resolve_elo_path


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


def test_only_the_models_the_elo_figures_draw_are_named_missing(tmp_path):
    path = tmp_path / "elo.csv"
    path.write_text("model,elo\na,1100\nb,1200\n")
    check = check_elo(path, ["a", "b", "c", "d"], drawn={"a", "c"})
    assert check.missing == ["c"]
    assert check.warning() == "1 configured model(s) without an Elo, not in the Elo figure: c"
    assert check_elo(path, ["a", "b", "c", "d"]).missing == ["c", "d"]


def test_paper_snapshot_covers_the_b1_models_but_the_two_it_names(repo_root):
    """resources/elo: every appendix B.1 model of config/paper.yaml has an Elo except the ones the file's header
    names; the values are the leaderboard's (spot-checked by hand against csv/lmsys.csv of the source commit)."""
    import yaml

    paper = yaml.safe_load((repo_root / "config" / "paper.yaml").read_text())
    path = resolve_elo_path(paper["analysis"]["elo_csv"])
    sets = paper["analysis"]["model_sets"]
    drawn = {m for name in paper["analysis"]["figure_sets"]["mcqa_vs_elo"] for m in sets[name]}
    assert len(drawn) == 17  # nine small (Starling listed twice in B.1 -> nine names) and eight medium
    check = check_elo(path, list(paper["models"]), drawn)
    header = next(line for line in path.read_text().splitlines() if line.startswith("# Not on the leaderboard"))
    named = sorted(part.strip(" .") for part in header.split(":")[1].split(","))
    assert sorted(check.missing) == named == ["Mistral-7B-Instruct-v0.3", "Yi-1.5-9B-Chat"]
    assert set(check.scores) == drawn - set(named)
    scores = read_elo(path)
    assert (scores["Athene-70B"], scores["gemma-2-9b-it"], scores["WizardLM-70B-V1.0"]) == (1250, 1192, 1106)
