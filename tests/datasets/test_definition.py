"""Benchmarks of your own: a config entry with the catalogue's keys is a benchmark like a catalogue entry, the catalogue
is one YAML file per benchmark read by the same loader, and a bad definition stops with one line naming its key."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError
from careval.datasets import CATALOGUE, REGISTRY, build_benchmark, get_benchmark
from careval.datasets.definition import BenchmarkDefinitionError, layered
from careval.datasets.registry import CATALOGUE_DIR, read_catalogue
from careval.inference import loglik_requests
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
WARD_QA = "resources/examples/ward_qa.jsonl"


@pytest.fixture
def demo_raw() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _plan(demo_raw: dict, benchmarks: dict):
    """The plan of the demo's first model on `benchmarks`, no LLM family, no analysis beyond the defaults."""
    model = next(iter(demo_raw["models"]))
    config = {
        "models": {model: demo_raw["models"][model]},
        "benchmarks": benchmarks,
        "metrics": {"skip": ["bleurt", "judge", "relaxed_perplexity"]},
        "analysis": {"mcqa_average": []},
    }
    return build_plan(config)


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("medqa", "medqa/sample.jsonl"),
        ("mts_dialog", "mts_dialog/sample.jsonl"),
        ("medical_transcriptions", "mtsamples/sample.jsonl"),
    ],
)
def test_a_benchmark_defined_in_the_config_is_its_catalogue_entry(demo_raw, shared_data, tmp_path, name, path):
    """The catalogue file's keys, written in a config under another name, make the same benchmark: the same entry,
    samples and requests (an MCQA, an open and a classification entry, on their real rows)."""
    data = str(shared_data / path)
    definition = {
        key: value for key, value in CATALOGUE[name].items() if key not in ("source", "split", "config", "hint")
    }
    plan = _plan(demo_raw, {name: {"path": data, "limit": 5}, f"my_{name}": {**definition, "path": data, "limit": 5}})
    ours, theirs = plan.benchmarks[f"my_{name}"], plan.benchmarks[name]
    assert ours == replace(theirs, name=f"my_{name}")
    # own benchmarks come after the catalogue's, whatever the config's order
    assert list(plan.benchmarks) == [name, f"my_{name}"]
    samples = {b: build_benchmark(plan.benchmarks[b], tmp_path / f"{b}.parquet", limit=5) for b in plan.benchmarks}
    # the same samples, but for a source without ids, whose ids are <benchmark>-<row>
    assert samples[f"my_{name}"].drop("benchmark", "id").equals(samples[name].drop("benchmark", "id"))
    assert samples[name].height == 5
    requests = [loglik_requests(samples[b], plan.benchmarks[b]).drop("id") for b in plan.benchmarks]
    assert requests[0].equals(requests[1])
    # a job of each reads the same facts (careval.specs): its identity differs only by the benchmark's name
    jobs = [plan.normalise_job(b).identity() for b in plan.benchmarks]
    assert {**jobs[0], "benchmark": None} == {**jobs[1], "benchmark": None}


def test_the_worked_example_defines_ward_qa_as_written_in_the_readme(demo_raw, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    own = yaml.safe_load((REPO / "resources" / "examples" / "own_benchmarks.yaml").read_text())
    ward_qa = {"ward_qa": own["benchmarks"]["ward_qa"]}
    plan = _plan(demo_raw, ward_qa)
    entry = plan.benchmarks["ward_qa"]
    assert (entry.task, entry.paper_task, entry.answer_format, entry.mcqa_style) == ("mcqa", None, "letter", "letters")
    samples = build_benchmark(entry, tmp_path / "ward_qa.parquet")
    first = json.loads((REPO / WARD_QA).read_text().splitlines()[0])
    requests = loglik_requests(samples, entry)
    # by hand: the README's prompt over the first row, the letters scored, gold B
    assert requests["context"][0] == (
        f"Question: {first['stem']}\nA. {first['a']}\nB. {first['b']}\nC. {first['c']}\nD. {first['d']}\nAnswer:"
    )
    assert requests["continuation"].to_list()[:4] == [" A", " B", " C", " D"]
    assert (samples.height, samples["id"][0], samples["answer"][0]) == (10, "w01", 1)
    # in no paper table, so in careval's table of the other benchmarks (the report's section of them)
    assert [(t.number, t.benchmarks) for t in plan.analysis.paper_tables if t.number == 21] == [(21, ("ward_qa",))]


WARD = {
    "task": "mcqa",
    "path": WARD_QA,
    "fields": {"id": "qid", "question": "stem", "options": ["a", "b", "c", "d"], "answer": "gold"},
    "answer_format": "letter",
    "prompt": "Question: {question}\n{options}\nAnswer:",
    "mcqa_style": "letters",
}


def _without(key: str) -> dict:
    return {k: v for k, v in WARD.items() if k != key}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**WARD, "task": "mcq"}, "benchmarks.ward_qa.task: unknown task 'mcq' (known: mcqa, open, classification"),
        (_without("task"), "benchmarks.ward_qa.task: missing (a benchmark of your own needs task, fields and a source"),
        (_without("fields"), "benchmarks.ward_qa.fields: missing (which source field is each sample's question, ...)"),
        (
            {**WARD, "fields": {"question": "stem", "options": ["a", "b", "c", "d"]}},
            "benchmarks.ward_qa.fields: no answer (the question is every sample's text; a mcqa benchmark maps its gold",
        ),
        (_without("path"), "benchmarks.ward_qa: no source: set path (a local file) or source (hf:<repo>, with split)"),
        ({**_without("path"), "source": "hf:me/ward"}, "benchmarks.ward_qa.split: missing (source hf:me/ward needs"),
        (
            {**WARD, "fields": {**WARD["fields"], "answer": "gold_letter"}},
            f"benchmarks.ward_qa.fields.answer: 'gold_letter' is not a field of {WARD_QA} (its first row has: qid, "
            "stem, a, b, c, d, gold)",
        ),
        (
            {**WARD, "prompt": "Question: {stem}\n{options}\nAnswer:"},
            "benchmarks.ward_qa.prompt: unknown placeholder {stem} (known: {question}, {context}, {options}",
        ),
        (
            {**WARD, "prompt": "Question: {question}\nAnswer:"},
            "benchmarks.ward_qa.prompt: no {options} placeholder, but the letters style scores the letters",
        ),
        ({**WARD, "transform": "shuffle"}, "benchmarks.ward_qa.transform: unknown transform 'shuffle' (known: "),
        ({**WARD, "fiels": {}}, "unknown config key 'benchmarks.ward_qa.fiels' (allowed: "),
        ({**WARD, "answer_format": "roman"}, "bad value for config key 'benchmarks.ward_qa.answer_format': 'roman' is"),
        ({**WARD, "paper_task": "triage"}, "benchmarks.ward_qa.paper_task: unknown paper task 'triage' (known: "),
        (
            {**WARD, "task": "open", "fields": {"question": "stem", "reference": "a"}},
            "benchmarks.ward_qa.mcqa_style: 'ward_qa' is not an mcqa benchmark (task open)",
        ),
        (
            {"lm_eval_task": "ward_qa_lm", "prompt": "Q: {question}"},
            "benchmarks.ward_qa.prompt: an lm-eval task builds its own documents, prompts and gold (lm_eval_task: "
            "ward_qa_lm); leave prompt out",
        ),
        (
            {"lm_eval_task": "ward_qa_lm", "lm_eval_include": "no/such/folder"},
            "benchmarks.ward_qa.lm_eval_include: no/such/folder is not a folder (of lm-eval task YAMLs)",
        ),
        (None, "benchmarks.ward_qa: unknown benchmark 'ward_qa': not in the catalogue (did you mean 'headqa'? known: "),
    ],
)
def test_a_bad_definition_stops_with_one_line_naming_the_benchmark_and_key(demo_raw, monkeypatch, entry, message):
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError) as error:
        _plan(demo_raw, {"ward_qa": entry})
    assert str(error.value).startswith(message) and "\n" not in str(error.value), str(error.value)


def test_a_catalogue_name_takes_any_key_of_the_schema(demo_raw, shared_data):
    """Under a catalogue name a config's keys replace the entry's, any of them (here the field mapping: MedQA's
    re-host written with the gold's text); a `path` replaces the whole source (split, revision, hint)."""
    data = str(shared_data / "medqa" / "sample.jsonl")
    plan = _plan(demo_raw, {"medqa": {"path": data, "fields": {"question": "question", "options": "options",
                                                                "answer": "answer"}, "answer_format": "text"}})  # fmt: skip
    entry = plan.benchmarks["medqa"]
    assert (entry.fields["answer"], entry.answer_format, entry.source.path) == ("answer", "text", data)
    assert entry.prompt == REGISTRY["medqa"].prompt and entry.source.hint == ""


def test_an_instruction_is_written_before_the_prompt_as_it_is_the_styles_own_or_none():
    """lm-eval's description: put before the prompt literally (a brace is no placeholder), per style where the styles
    differ (MMLU's), replaced or left out by a config's key like any other."""
    from careval.tasks.prompts import fill_prompt

    ward = get_benchmark("ward_qa", {**WARD, "instruction": "Answer {as} a ward nurse.\n\n"})
    assert ward.instruction == "Answer {as} a ward nurse.\n\n"
    filled = fill_prompt(ward.prompt, {"question": "q", "options": ["x", "y"]})
    assert filled == "Answer {as} a ward nurse.\n\nQuestion: q\nA. x\nB. y\nAnswer:"
    for style, opening in (("letters", "multiple choice questions"), ("cloze", "questions")):
        mmlu = get_benchmark("mmlu_anatomy", {"mcqa_style": style})
        assert mmlu.instruction == f"The following are {opening} (with answers) about anatomy.\n\n"
        assert mmlu.prompt.startswith(mmlu.instruction) and "{question}" not in mmlu.instruction
    assert get_benchmark("olaph", {"instruction": ""}).prompt == "{question}"
    assert get_benchmark("medqa").instruction == ""


def test_layers_merge_key_by_key_a_source_replacing_a_source():
    base = {
        "source": "hf:a/b",
        "split": "test",
        "config": "en",
        "fields": {"question": "q"},
        "formats": {"x": {"a": 1}},
    }
    top = {"path": "mine.jsonl", "formats": {"x": {"b": 2}, "y": {}}}
    assert layered(base, top) == {
        "fields": {"question": "q"},
        "path": "mine.jsonl",
        "formats": {"x": {"a": 1, "b": 2}, "y": {}},
    }


def test_the_catalogue_is_one_yaml_file_per_benchmark_in_its_index_order():
    files = sorted(p.stem for p in CATALOGUE_DIR.glob("*.yaml") if not p.name.startswith("_"))
    assert sorted(REGISTRY) == files and list(REGISTRY)[:4] == ["demo_mcqa", "demo_open_qa", "demo_note", "medqa"]
    # the MMLU subjects and the OLAPH subsets share their keys through an include
    assert "include" not in CATALOGUE["mmlu_anatomy"] and CATALOGUE["mmlu_anatomy"]["source"] == "hf:cais/mmlu"
    assert REGISTRY["olaph_live_qa"].prompt == REGISTRY["olaph"].prompt


def test_no_catalogue_file_writes_a_key_twice():
    # read without the check at import (careval.datasets.registry): a second key would silently win
    from careval.config import check_duplicate_keys

    for path in sorted(CATALOGUE_DIR.glob("*.yaml")):
        check_duplicate_keys(path.read_text(encoding="utf-8"), str(path))
    with pytest.raises(ConfigError, match=r"x.yaml:2: duplicated key 'task' \(first at line 1\)"):
        check_duplicate_keys("task: mcqa\ntask: open\n", "x.yaml")


def test_a_catalogue_file_the_index_misses_is_an_error(tmp_path):
    for path in CATALOGUE_DIR.glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "ward_qa.yaml").write_text(yaml.safe_dump(WARD))
    with pytest.raises(BenchmarkDefinitionError, match=r"_index.yaml: ward_qa not listed in the catalogue's index$"):
        read_catalogue(tmp_path)


def test_a_configs_own_prompt_for_a_catalogue_benchmark_drops_the_catalogues_instruction():
    """MMLU's prompt starts with lm-eval's description (its instruction); a prompt written in the config replaces the
    whole prompt, as it did before the instruction was kept apart, unless the config gives an instruction too."""
    catalogue = get_benchmark("mmlu_anatomy")
    assert catalogue.instruction and catalogue.prompt.startswith(catalogue.instruction)
    own = get_benchmark("mmlu_anatomy", {"prompt": "Q: {question}\n{options}\nA:"})
    assert (own.instruction, own.prompt) == ("", "Q: {question}\n{options}\nA:")
    kept = get_benchmark("mmlu_anatomy", {"prompt": "Q: {question}\n{options}\nA:", "instruction": "Answer.\n"})
    assert (kept.instruction, kept.prompt) == ("Answer.\n", "Answer.\nQ: {question}\n{options}\nA:")
