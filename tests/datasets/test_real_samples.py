"""The 16 real-data samples in ../shared/data, each loaded through its registry entry (`path:` override)."""

import json

import polars as pl
import pytest

from careval.datasets import build_benchmark, get_benchmark
from careval.datasets.benchmark import CHOICE_TASKS
from careval.schemas import DATASET_SCHEMA

# benchmark -> (sample folder, overrides, first row's expected question, first row's expected gold)
# The expected values are read from the raw row by hand-written expressions, another way than the
# entry's field mapping: for MCQA the gold option's text, for open tasks the reference text.
CASES = {
    "medqa": ("medqa", {}, lambda r: r["question"], lambda r: r["answer"]),
    "medmcqa": ("medmcqa", {"format": "medpredict"}, lambda r: r["question"], lambda r: r["choices"][r["answer"]][3:]),
    "pubmedqa": ("pubmedqa", {}, lambda r: r["QUESTION"], lambda r: r["final_decision"]),
    "mmlu_anatomy": (
        "mmlu_medical",
        {"format": "csv_rehost"},
        lambda r: r["question"],
        lambda r: r[f"choice{r['answer']}"],
    ),
    "headqa": (
        "headqa",
        {},
        lambda r: r["qtext"],
        lambda r: next(a["atext"] for a in r["answers"] if str(a["aid"]) == r["ra"]),
    ),
    "medical_text_classification": (
        "medical_abstracts_tc",
        # Schopf et al.'s column names; every row (the authors' first 10% is the catalogue's default)
        {"format": "medical_abstracts", "fraction": 1.0},
        lambda r: r["medical_abstract"],
        lambda r: {"3": "nervous system diseases"}[r["condition_label"]],
    ),
    "medical_transcriptions": ("mtsamples", {}, lambda r: r["transcription"], lambda r: r["medical_specialty"].strip()),
    "biored": ("biored", {}, lambda r: r["passages"][0]["text"], None),
    "mediqa2019": (
        "mediqa2019_qa",
        {"format": "xml"},
        lambda r: r["QuestionText"],
        lambda r: r["AnswerList"][0]["AnswerText"],
    ),
    # the authors' meqsum sends the message without its "SUBJECT: ..." line
    "meqsum": ("meqsum", {}, lambda r: r["CHQ"].partition("MESSAGE: ")[2] or r["CHQ"], lambda r: r["Summary"]),
    "mts_dialog": ("mts_dialog", {}, lambda r: r["dialogue"], lambda r: r["section_text"]),
    "aci_bench": ("aci_bench", {}, lambda r: r["dialogue"], lambda r: r["note"]),
    "olaph_kqa_golden": ("medlfqa_kqa_golden", {}, lambda r: r["Question"], lambda r: r["Free_form_answer"]),
    "olaph_kqa_silver": ("medlfqa_kqa_silver", {}, lambda r: r["Question"], lambda r: r["Free_form_answer"]),
    "olaph_live_qa": ("medlfqa_live_qa", {}, lambda r: r["Question"], lambda r: r["Free_form_answer"]),
    "olaph_medication_qa": ("medlfqa_medication_qa", {}, lambda r: r["Question"], lambda r: r["Free_form_answer"]),
}


def _raw(shared_data, folder):
    return [json.loads(line) for line in open(shared_data / folder / "sample.jsonl", encoding="utf-8")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_sample_loads_through_its_entry(tmp_path, shared_data, name):
    folder, overrides, question_of, gold_of = CASES[name]
    entry = get_benchmark(name, {**overrides, "path": str(shared_data / folder / "sample.jsonl")})
    samples = build_benchmark(entry, tmp_path / f"{name}.parquet")
    raw = _raw(shared_data, folder)

    assert samples.schema == pl.Schema(DATASET_SCHEMA)
    assert samples.height >= 30 and samples["id"].n_unique() == samples.height
    assert (samples["question"].str.strip_chars().str.len_chars() > 0).all()
    first = samples.row(0, named=True)
    assert question_of(raw[0]).strip() in first["question"]
    if entry.task in CHOICE_TASKS:
        lengths = samples["options"].list.len()
        assert (lengths >= 2).all()
        assert all(0 <= a < n for a, n in zip(samples["answer"], lengths))
        # MTSamples' choices keep the source's leading space, as the authors list them
        assert first["options"][first["answer"]].strip().casefold() == gold_of(raw[0]).strip().casefold()
        assert samples["reference"].is_null().all()
    else:
        assert (samples["reference"].str.strip_chars().str.len_chars() > 0).all()
        assert samples["options"].is_null().all() and samples["answer"].is_null().all()
        if gold_of is not None:
            assert first["reference"] == gold_of(raw[0])  # as written, like lm-eval's doc_to_target


def test_mmlu_rehost_selects_one_subject_per_entry(tmp_path, shared_data):
    raw = _raw(shared_data, "mmlu_medical")
    path = str(shared_data / "mmlu_medical" / "sample.jsonl")
    for subject in ("anatomy", "medical_genetics", "professional_medicine"):
        samples = build_benchmark(
            get_benchmark(f"mmlu_{subject}", {"format": "csv_rehost", "path": path}), tmp_path / f"{subject}.parquet"
        )
        expected = [r["question"].strip() for r in raw if r["subject"] == subject]
        assert samples["question"].to_list() == expected and len(expected) == 33


def test_olaph_keeps_must_have_and_nice_to_have_in_meta(tmp_path, shared_data):
    raw = _raw(shared_data, "medlfqa_kqa_golden")
    entry = get_benchmark("olaph_kqa_golden", {"path": str(shared_data / "medlfqa_kqa_golden" / "sample.jsonl")})
    samples = build_benchmark(entry, tmp_path / "o.parquet")
    metas = [json.loads(m) for m in samples["meta"]]
    assert [m["must_have"] for m in metas] == [r["Must_have"] for r in raw]
    assert [m["nice_to_have"] for m in metas] == [r["Nice_to_have"] for r in raw]


def test_olaph_live_qa_skips_and_counts_its_empty_answer(shared_data, capsys):
    # row 70 of live_qa has an empty Free_form_answer (checked in the raw file here)
    raw = _raw(shared_data, "medlfqa_live_qa")
    empty = [i for i, r in enumerate(raw) if not r["Free_form_answer"].strip()]
    assert empty == [70]
    from careval.datasets.normalise import normalise_report

    result = normalise_report(raw, get_benchmark("olaph_live_qa"))
    assert result.samples.height == len(raw) - 1 and len(result.skipped) == 1
    # rows given without a file are numbered from 1: the 0-based index 70 is row 71
    assert result.skipped[0] == "olaph_live_qa: row 71: field 'Free_form_answer' must be non-empty text"


def test_biored_gold_relations_keep_every_relation_with_mention_names(tmp_path, shared_data):
    raw = _raw(shared_data, "biored")
    samples = build_benchmark(
        get_benchmark("biored", {"path": str(shared_data / "biored" / "sample.jsonl")}), tmp_path / "b.parquet"
    )
    assert samples["id"].to_list() == [r["id"] for r in raw]
    meta = json.loads(samples["meta"][0])
    assert len(meta["relations"]) == len(raw[0]["relations"])
    # the first document's first relation, looked up by hand in the raw annotations
    relation = raw[0]["relations"][0]["infons"]
    mentions = {
        a["text"]
        for p in raw[0]["passages"]
        for a in p["annotations"]
        if a["infons"]["identifier"] == relation["entity1"]
    }
    assert set(meta["relations"][0]["entity1"]) == mentions and meta["relations"][0]["type"] == relation["type"]
    assert samples["question"][0].startswith(raw[0]["passages"][0]["text"])
