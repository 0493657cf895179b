"""Bad input files and config files found before any job runs (issue 40), as a new user meets them: each probe
makes one bad input from the demo's config and files and asserts the one line careval prints.

The probes of input files run what the Snakefile runs before the DAG (build_plan, then check_input_files) and
print what it prints (`careval config error: <line>`); the probes of config files run `snakemake` itself, whose
workflow profile checks them before Snakemake loads them. The plan's own cross-checks are the table of
tests/test_plan.py; the results folder's faults (a file cut short, deleted, or left by an earlier config) are
tests/workflow/test_reruns.py's, on a finished run.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from workflow_runs import make_workdir, snakemake

from careval.config import ConfigError, command_line_config_files, config_file_problem
from careval.inputs import check_input_files
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
RATINGS = REPO / "resources" / "demo" / "human_ratings.csv"
SHEETS = REPO / "resources" / "demo" / "careqa_review"


@pytest.fixture
def demo() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def door(config: dict) -> str | None:
    """What a run of `config` prints before its DAG: its careval config error line, or None."""
    try:
        check_input_files(build_plan(copy.deepcopy(config)))
    except ConfigError as error:
        return f"careval config error: {error}"
    return None


def ratings_file(tmp_path: Path, extra: str = "", bom: bool = False) -> Path:
    """The demo's ratings, with `extra` rows after its last (line 77 onwards)."""
    text = RATINGS.read_text(encoding="utf-8") + extra
    path = tmp_path / "ratings.csv"
    path.write_bytes((("\ufeff" if bom else "") + text).encode("utf-8"))
    return path


def test_the_demo_passes_the_door(demo):
    assert door(demo) is None


def test_conflicting_duplicate_ratings_stop_the_run_before_any_job(demo, tmp_path):
    path = ratings_file(tmp_path, "smollm2-135m-instruct,demo_open_qa,open-001,helpfulness,1,dev_a\n")
    demo["analysis"]["human_ratings"] = str(path)
    assert door(demo) == (
        f"careval config error: analysis.human_ratings: {path}: line 77: field rating: 1 conflicts with 3 on line 5: "
        "rater 'dev_a' rated smollm2-135m-instruct's answer to demo_open_qa open-001 (helpfulness) twice; keep one rating"
    )
    # the same row again is no conflict
    path.write_text(RATINGS.read_text() + "smollm2-135m-instruct,demo_open_qa,open-001,helpfulness,3,dev_a\n")
    assert door(demo) is None


@pytest.mark.parametrize(
    ("row", "rule"),
    [
        # a sample id is checked where the benchmark's local file is read at the door (the demo's are)
        ("gemma3-270m,demo_open_qa,open-999,helpfulness,3,dev_a", "field id: 'open-999' is not a sample id of "),
        (
            "gemma3-270m,demo_open_qa,open-001,helpfulness,7,dev_a",
            "field rating: 7 is outside the declared range [1, 5]",
        ),
        ("gpt-9,demo_open_qa,open-001,helpfulness,3,dev_a", "field model: 'gpt-9' is not an evaluated model"),
    ],
)
def test_a_bad_rating_names_file_line_field_and_rule_before_any_job(demo, tmp_path, row, rule):
    path = ratings_file(tmp_path, row + "\n")
    demo["analysis"]["human_ratings"] = str(path)
    assert door(demo).startswith(f"careval config error: analysis.human_ratings: {path}: line 77: {rule}")


def test_the_declared_range_is_the_one_checked(demo, tmp_path):
    demo["analysis"]["human_ratings"] = str(ratings_file(tmp_path))
    demo["analysis"]["human_rating_range"] = [1, 3]  # the demo's raters gave 4s and 5s
    assert ", 3]" in door(demo) and "is outside the declared range [1, 3]" in door(demo)


def test_a_ratings_file_saved_by_excel_is_read(demo, tmp_path):
    demo["analysis"]["human_ratings"] = str(ratings_file(tmp_path, bom=True))
    assert door(demo) is None


def test_a_missing_ratings_file_is_named_as_the_config_gave_it(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    demo["analysis"]["human_ratings"] = "ratings/people.csv"
    assert door(demo) == (
        "careval config error: analysis.human_ratings: 'ratings/people.csv' does not exist "
        f"(looked in {tmp_path} and in {REPO})"
    )


def test_a_bad_row_of_a_local_benchmark_file_stops_the_run_before_any_job(demo, tmp_path):
    rows = (REPO / "resources" / "demo" / "demo_mcqa.jsonl").read_text().splitlines()
    rows[2] = rows[2].replace('"answer": ', '"answer": "E", "was": ')
    path = tmp_path / "mcqa.jsonl"
    path.write_text("\n".join(rows) + "\n")
    demo["benchmarks"]["demo_mcqa"] = {"path": str(path)}
    assert door(demo).startswith(
        f"careval config error: benchmarks.demo_mcqa: demo_mcqa: {path}:3: field 'answer' = 'E' is not a valid "
        "index0 answer"
    )


def test_a_bad_review_sheet_stops_the_run_before_any_job(demo, tmp_path):
    sheets = tmp_path / "review"
    shutil.copytree(SHEETS, sheets)
    sheet = sheets / "translation" / "reviewer_a.csv"
    lines = sheet.read_text().splitlines()
    lines[1] = lines[1].replace("correct", "corect")
    sheet.write_text("\n".join(lines) + "\n")
    demo["careqa"]["review"]["filled_sheets"] = str(sheets)
    assert door(demo).startswith(
        f"careval config error: careqa.review.filled_sheets (translation): {sheet}: row 2, column 'label': expected "
        "one of "
    )


def test_a_missing_elo_csv_is_named_as_the_config_gave_it(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    demo["analysis"]["elo_csv"] = "elo/arena.csv"
    assert door(demo) == (
        f"careval config error: analysis.elo_csv: 'elo/arena.csv' does not exist (looked in {tmp_path} and in {REPO})"
    )


@pytest.mark.parametrize(
    ("argv", "files"),
    [
        (["-n", "--configfile", "a.yaml"], ["a.yaml"]),
        (["--cores", "2", "results/x.pdf", "--configfile", "a.yaml", "b.yaml", "-n"], ["a.yaml", "b.yaml"]),
        (["--configfiles=a.yaml", "results/x.pdf"], ["a.yaml"]),
        (["--cores", "2", "results/x.pdf"], []),
    ],
)
def test_the_config_files_of_a_command_line(argv, files):
    assert command_line_config_files(argv) == files


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        ("", "the file is empty (a config is a YAML mapping of settings: models, benchmarks, ...)"),
        ("# only a comment\n", "the file is empty (a config is a YAML mapping of settings: models, benchmarks, ...)"),
        ("- models\n- benchmarks\n", "not a YAML mapping of settings (it holds a list)"),
        ("models: [unclosed\n", "not valid YAML (line 2)"),
        ("models: {}\n", None),
    ],
)
def test_what_a_config_file_cannot_be(tmp_path, content, problem):
    path = tmp_path / "my.yaml"
    if content is not None:
        path.write_text(content)
    assert config_file_problem(path) == (None if problem is None else f"{path}: {problem}")


@pytest.mark.parametrize("case", ["missing", "empty"])
def test_a_missing_or_empty_configfile_is_one_careval_line_from_snakemake(repo_root, tmp_path, case):
    """Snakemake itself: a missing --configfile was a 25-line traceback, an empty one a line without its name."""
    work = make_workdir(repo_root, tmp_path / "careval", yaml.safe_load((repo_root / "config/config.yaml").read_text()))
    if case == "empty":
        (work / "empty.yaml").write_text("")
    name = "empty.yaml" if case == "empty" else "nope.yaml"
    result = snakemake(["-n", "--cores", "1", "--configfile", name], work, timeout=120)
    assert result.returncode == 1
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    problem = "the file is empty (a config is a YAML mapping of settings: models, benchmarks, ...)"
    if case == "missing":
        problem = f"no such file (from {work})"
    assert lines[-1] == f"careval config error: --configfile {name}: {problem}"
    assert not any("Traceback" in line or "WorkflowError" in line for line in lines)
