"""Normalisation onto the canonical schema: the demo data, real samples, and one-line errors for bad rows."""

import json
from dataclasses import replace

import polars as pl
import pytest

from careval.datasets import REGISTRY, SampleError, build_benchmark, get_benchmark, normalise
from careval.datasets.benchmark import LocalSource
from careval.schemas import DATASET_SCHEMA


@pytest.mark.parametrize(
    "name, task, minimum", [("demo_mcqa", "mcqa", 20), ("demo_open_qa", "open", 20), ("demo_note", "open", 10)]
)
def test_demo_benchmarks_normalise(tmp_path, repo_root, name, task, minimum):
    samples = build_benchmark(get_benchmark(name), tmp_path / f"{name}.parquet", root=repo_root)
    assert samples.schema == pl.Schema(DATASET_SCHEMA)
    assert samples.height >= minimum
    assert samples["id"].n_unique() == samples.height
    assert (samples["task"] == task).all()
    assert samples["question"].str.len_chars().min() > 10
    if task == "mcqa":
        assert samples["options"].list.len().to_list() == [4] * samples.height
        assert samples["answer"].is_between(0, 3).all()
        # the gold index is spread over the options, so always picking one letter cannot win
        assert samples["answer"].value_counts()["count"].max() <= samples.height // 2
    else:
        assert samples["reference"].str.len_chars().min() > 10
        assert samples["options"].is_null().all()


def test_limit_keeps_the_first_rows(tmp_path, repo_root):
    full = build_benchmark(get_benchmark("demo_mcqa"), tmp_path / "a.parquet", root=repo_root)
    limited = build_benchmark(get_benchmark("demo_mcqa"), tmp_path / "b.parquet", limit=5, root=repo_root)
    assert limited["id"].to_list() == full["id"].to_list()[:5]


def test_real_medqa_sample_through_a_letter_answer_entry(shared_data):
    # MedQA's real rows: options as a dict keyed by letter, gold answer as a letter (answer_idx).
    entry = replace(get_benchmark("medqa"), source=LocalSource(str(shared_data / "medqa" / "sample.jsonl")))
    rows = [json.loads(line) for line in (shared_data / "medqa" / "sample.jsonl").read_text().splitlines()]
    samples = normalise(rows, entry)
    assert samples.height == len(rows) == 200
    for row, sample in zip(rows, samples.iter_rows(named=True)):
        # the gold option text, found the other way round: through the answer field with the text
        assert sample["options"][sample["answer"]] == row["answer"].strip()


def test_real_meqsum_sample(shared_data):
    rows = [json.loads(line) for line in (shared_data / "meqsum" / "sample.jsonl").read_text().splitlines()]
    samples = normalise(rows, REGISTRY["meqsum"])
    assert samples.height == len(rows)
    # as written (4 of the 200 summaries end in whitespace): lm-eval's perplexity counts the raw target
    assert samples["reference"].to_list() == [row["Summary"] for row in rows]
    assert sum(row["Summary"] != row["Summary"].strip() for row in rows) > 0


def test_missing_field_names_benchmark_row_and_field():
    rows = [
        {"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0},
        {"id": "b", "question": "q2?", "options": ["x", "y"]},
    ]
    with pytest.raises(SampleError, match=r"^demo_mcqa: row 2: missing field 'answer'$"):
        normalise(rows, get_benchmark("demo_mcqa"))


def test_out_of_range_answer_and_duplicate_id_are_named():
    entry = get_benchmark("demo_mcqa")
    with pytest.raises(
        SampleError,
        match=r"^demo_mcqa: row 1: field 'answer' = 7 is not a valid index0 answer \(expected an integer from 0 to 1\)$",
    ):
        normalise([{"id": "a", "question": "q?", "options": ["x", "y"], "answer": 7}], entry)
    rows = [{"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0}] * 2
    with pytest.raises(SampleError, match=r"^demo_mcqa: row 2: duplicate id 'a' \(first at row 1\)$"):
        normalise(rows, entry)


def test_unknown_benchmark_lists_the_known_ones():
    with pytest.raises(KeyError, match=r"unknown benchmark 'demo_mcq'.*demo_mcqa"):
        get_benchmark("demo_mcq")
