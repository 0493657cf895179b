"""Issue 46's inputs found at the door, before any job: each probe makes one bad input from the demo's config and
asserts the whole line careval prints, as the Snakefile runs it (build_plan, then check_input_files); the config-time
warning lines of the plan too. (The studies' lines: tests/test_study_checks.py.)"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError
from careval.inputs import check_input_files
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
WARD = REPO / "resources" / "examples" / "ward_qa.jsonl"
WARD_LM = REPO / "resources" / "examples" / "lm_eval_tasks" / "ward_qa_lm.yaml"
OWN = {
    "task": "mcqa",
    "path": str(WARD),
    "fields": {"id": "qid", "question": "stem", "options": ["a", "b", "c", "d"], "answer": "gold"},
    "answer_format": "letter",
    "prompt": "Question: {question}\n{options}\nAnswer:",
    "mcqa_style": "letters",
}


@pytest.fixture
def demo() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CAREVAL_CACHE", str(tmp_path / "careval-cache"))  # lm-eval tasks' facts: read afresh


def door(config: dict) -> str | None:
    """What a run of `config` prints before its DAG: its careval config error line, or None."""
    try:
        check_input_files(build_plan(copy.deepcopy(config)))
    except ConfigError as error:
        return f"careval config error: {error}"
    return None


def test_an_own_benchmark_s_misspelt_path_is_one_line_at_plan_time(demo):
    """Once accepted, then a `SourceError ... file not found` traceback in the normalisation job."""
    demo["benchmarks"]["ward_qa"] = {**OWN, "path": "resources/examples/ward_qa.jsnl"}
    assert door(demo) == (
        "careval config error: benchmarks.ward_qa.path: 'resources/examples/ward_qa.jsnl' does not exist "
        f"(looked in {Path.cwd()})"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_own_benchmark_s_unreadable_file_is_one_line(demo, tmp_path):
    path = tmp_path / "ward.jsonl"
    path.write_text(WARD.read_text())
    path.chmod(0)
    demo["benchmarks"]["ward_qa"] = {**OWN, "path": str(path)}
    assert door(demo) == f"careval config error: benchmarks.ward_qa.path: '{path}' cannot be read (permission denied)"


def test_a_catalogue_benchmark_s_own_missing_file_is_still_left_to_its_job(demo):
    """MIMIC-III's credentialed file (no path in the config): its job's line says how to get it."""
    demo["benchmarks"]["mimic_iii_hospital_course"] = {"limit": 2}
    demo["metrics"]["judge"]["benchmarks"] = ["demo_open_qa"]
    assert door(demo) is None


def lm_eval_folder(tmp_path: Path, text: str, name: str = "ward_own.yaml") -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    return folder


def test_an_lm_eval_task_s_missing_data_files_is_one_line_at_plan_time(demo, tmp_path, cache_home):
    """Once accepted, then a 57-line FileNotFoundError in the normalisation job."""
    text = WARD_LM.read_text().replace("task: ward_qa_lm", "task: ward_own")
    folder = lm_eval_folder(tmp_path, text.replace("resources/examples/ward_qa.jsonl", str(tmp_path / "gone.jsonl")))
    demo["benchmarks"]["ward_own"] = {"lm_eval_task": "ward_own", "lm_eval_include": str(folder)}
    assert door(demo) == (
        f"careval config error: benchmarks.ward_own.lm_eval_task: 'ward_own' reads data_files {tmp_path / 'gone.jsonl'}, "
        f"which does not exist (looked in {Path.cwd()})"
    )
    (tmp_path / "gone.jsonl").write_text(WARD.read_text())  # there now: the plan passes (the facts were kept)
    assert door(demo) is None
    (tmp_path / "gone.jsonl").unlink()  # gone again: found at the next plan, though the task's facts are kept
    assert door(demo).endswith(f"{tmp_path / 'gone.jsonl'}, which does not exist (looked in {Path.cwd()})")


def test_an_lm_eval_yaml_s_syntax_error_names_its_file_and_line(demo, tmp_path, cache_home):
    """Once: "'ward_syn_own' is no task, group or tag of lm-eval" (lm-eval's index skips a file it cannot read)."""
    folder = lm_eval_folder(tmp_path, "task: ward_syn_own\ndataset_path: json\noutput_type: [multiple_choice\n")
    demo["benchmarks"]["ward_syn_own"] = {"lm_eval_task": "ward_syn_own", "lm_eval_include": str(folder)}
    assert door(demo) == (
        f"careval config error: benchmarks.ward_syn_own.lm_eval_include: {folder / 'ward_own.yaml'}: not valid YAML "
        "(line 4, column 1: expected ',' or ']', but got '<stream end>'; while parsing a flow sequence from line 3)"
    )


def test_an_lm_eval_yaml_s_missing_include_is_named(demo, tmp_path, cache_home):
    folder = lm_eval_folder(tmp_path, "include: _base.yaml\ntask: ward_inc\n")
    demo["benchmarks"]["ward_inc"] = {"lm_eval_task": "ward_inc", "lm_eval_include": str(folder)}
    assert door(demo) == (
        f"careval config error: benchmarks.ward_inc.lm_eval_include: {folder / 'ward_own.yaml'}: include: _base.yaml: "
        f"no file {folder / '_base.yaml'}"
    )


def test_a_cache_dir_that_is_a_file_is_one_line(demo, tmp_path):
    """Once a NotADirectoryError in a job, the key not named."""
    (tmp_path / "afile").write_text("x")
    demo["resources"]["cache_dir"] = str(tmp_path / "afile")
    assert door(demo) == (
        f"careval config error: resources.cache_dir: '{tmp_path / 'afile'}' is a file, not a folder (the request cache's)"
    )
    demo["resources"]["cache_dir"] = str(tmp_path / "afile" / "cache")
    assert door(demo) == (
        f"careval config error: resources.cache_dir: '{tmp_path / 'afile' / 'cache'}' cannot be made: "
        f"{tmp_path / 'afile'} is not a folder"
    )
    demo["resources"]["cache_dir"] = str(tmp_path / "new" / "cache")  # made by the first job
    assert door(demo) is None


def test_a_definition_named_like_a_catalogue_benchmark_needs_include(demo, tmp_path):
    """Once a full MCQA entry named demo_mcqa silently kept the catalogue's paper_task, description, meta_fields."""
    demo["benchmarks"]["demo_mcqa"] = OWN
    assert door(demo) == (
        "careval config error: benchmarks.demo_mcqa: 'demo_mcqa' is a catalogue benchmark, and this entry defines a "
        "benchmark (task): it would keep the catalogue's paper_task, description and meta_fields; give it a name of "
        "its own, or start it from a file with include: (the catalogue's: "
        "careval:src/careval/datasets/catalogue/demo_mcqa.yaml)"
    )
    # the override keys alone are an override of the catalogue's entry, as before
    demo["benchmarks"]["demo_mcqa"] = {"limit": 5, "prompt": "Q: {question}\nA:"}
    assert door(demo) is None
    # with include: a definition of its own, from the file it names: nothing of the catalogue's kept unasked
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({"description": "ward questions"}))
    demo["benchmarks"]["demo_mcqa"] = {**OWN, "include": str(tmp_path / "base.yaml")}
    plan = build_plan(copy.deepcopy(demo))
    entry = plan.benchmarks["demo_mcqa"]
    assert (entry.description, entry.paper_task, entry.meta_fields) == ("ward questions", None, ())


def test_the_default_cost_benchmark_absent_from_the_mcqa_average_is_a_warning_line(demo):
    """Once only a report page said so."""
    del demo["analysis"]["mcqa_average"]  # the paper's set: none of the demo's benchmarks
    plan = build_plan(copy.deepcopy(demo))
    assert [w for w in plan.warnings if w.startswith("analysis.cost")] == [
        "analysis.cost.benchmark: mcqa_weighted_average is not computed: analysis.mcqa_average (medmcqa, pubmedqa, "
        "medqa, ... (10)) has none of this run's benchmarks (its MCQA benchmarks: demo_mcqa); the cost page has no "
        "quality to show: list them in analysis.mcqa_average, or set analysis.cost.benchmark and metric"
    ]
    assert not [
        w for w in build_plan(yaml.safe_load((REPO / "config" / "config.yaml").read_text())).warnings if "cost" in w
    ]
