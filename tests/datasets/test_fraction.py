"""`fraction`: the first int(fraction * n) source rows in file order, as the authors' process_docs keep them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from careval.datasets import get_benchmark
from careval.datasets.definition import BenchmarkDefinitionError
from careval.datasets.normalise import EmptyBenchmarkError, normalise_report
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[2]


def _olaph_process_docs():
    """The authors' olaph process_docs, read out of lm-eval's utils.py (importing it loads hub metrics)."""
    datasets = pytest.importorskip("datasets")
    lm_eval_tasks = pytest.importorskip("lm_eval.tasks")
    source = (Path(lm_eval_tasks.__file__).parent / "olaph" / "utils.py").read_text(encoding="utf-8")
    function = next(node for node in ast.parse(source).body if getattr(node, "name", None) == "process_docs")
    namespace = {"datasets": datasets}
    exec(compile(ast.Module([function], type_ignores=[]), "olaph/utils.py", "exec"), namespace)
    return namespace["process_docs"]


def _rows(shared_data: Path, folder: str) -> list[dict]:
    lines = (shared_data / folder / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("n", [9, 10, 19, 57, 100, 200])
def test_olaph_keeps_the_rows_the_authors_process_docs_keeps(shared_data, n):
    datasets = pytest.importorskip("datasets")
    process_docs = _olaph_process_docs()
    rows = (_rows(shared_data, "medlfqa_kqa_golden") + _rows(shared_data, "medlfqa_live_qa"))[:n]
    # the same columns in every row, as a datasets.Dataset has them
    rows = [{key: row[key] for key in ("Question", "Free_form_answer", "Must_have", "Nice_to_have")} for row in rows]
    theirs = process_docs(datasets.Dataset.from_list(rows))["Question"]
    result = normalise_report(rows, get_benchmark("olaph", {"fraction": 0.1})) if theirs else None
    if not theirs:  # int(0.1 * 9) = 0: no sample, and a one-line reason
        with pytest.raises(EmptyBenchmarkError, match=r"fraction: the first 0.1 of 9 rows is none of them"):
            normalise_report(rows, get_benchmark("olaph", {"fraction": 0.1}))
        return
    assert result.samples["question"].to_list() == theirs
    assert (result.n_read, result.n_selected) == (n, n // 10)


def test_medical_text_classification_keeps_the_authors_first_tenth(shared_data):
    datasets = pytest.importorskip("datasets")
    authors = pytest.importorskip("lm_eval.tasks.med_text_classification.utils")
    rows = [
        {"class": r["condition_label"], "text": r["medical_abstract"]}
        for r in _rows(shared_data, "medical_abstracts_tc")
    ]
    theirs = authors.process_docs(datasets.Dataset.from_list(rows))
    ours = normalise_report(rows, get_benchmark("medical_text_classification")).samples  # the catalogue's 0.1
    assert ours["question"].to_list() == theirs["text"] and ours.height == 20
    assert ours["answer"].to_list() == [authors.doc_to_target_easy(doc) for doc in theirs]


def test_fraction_is_not_limit():
    """limit counts valid samples after skipped rows; fraction counts source rows before any is read."""
    rows = [{"Question": "", "Free_form_answer": "a"}] * 5 + [
        {"Question": f"q{i}", "Free_form_answer": "a"} for i in range(15)
    ]
    entry = get_benchmark("olaph")  # on_bad_row: skip
    assert normalise_report(rows, entry, limit=2).samples["question"].to_list() == ["q0", "q1"]
    with pytest.raises(EmptyBenchmarkError, match="all 2 rows were skipped"):
        normalise_report(rows, get_benchmark("olaph", {"fraction": 0.1}))  # the first 2 rows: both empty
    assert normalise_report(rows, get_benchmark("olaph", {"fraction": 0.5})).samples.height == 5


def test_paper_config_scores_the_authors_tenth_of_olaph():
    plan = build_plan(yaml.safe_load((REPO / "config" / "paper.yaml").read_text()))
    assert plan.benchmarks["olaph"].fraction == 0.1
    assert get_benchmark("olaph").fraction is None  # the catalogue's entry scores every row


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (0, "0 is less than or equal to the minimum of 0"),
        (1.5, "1.5 is greater than the maximum of 1"),
        (True, "True is not of type 'number'"),
        ("0.1", "'0.1' is not of type 'number'"),
    ],
)
def test_a_bad_fraction_is_one_line_naming_the_key(value, why):
    # the schema's check (the config's and the catalogue's benchmarks share it), also where a library caller asks
    with pytest.raises(BenchmarkDefinitionError) as error:
        get_benchmark("olaph", {"fraction": value})
    assert str(error.value) == f"bad value for config key 'benchmarks.olaph.fraction': {why}"
