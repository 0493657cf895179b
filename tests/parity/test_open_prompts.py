"""The authors' open tasks (lm-eval 0.4.13 generate_until tasks): careval sends their prompts and stops at their `until`.

For every open task the authors defined, their own task YAML is loaded with lm-eval's loader (its
`!function` utils imported from the installed package, not copied) and built as lm-eval's
ConfigurableTask over a local jsonl, written in the layout of the task's hub dataset from real rows
of ../shared/data. careval's catalogue entry reads the same file (its `path:` override, the hub
field mapping). The prompt careval sends must equal lm-eval's zero-shot context, which is
`description + doc_to_text(doc)`, on every row.

The utils modules load their metrics at import (`evaluate.load("bleu")`, ..., F1RadGraph), which
needs the hub; those loaders are stubbed (only the prompts and their length rule are compared).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar
from unittest import mock

import pytest

pytest.importorskip("lm_eval")

from careval.datasets import build_benchmark, get_benchmark
from careval.inference import sampling_for
from careval.scoring import score_text
from careval.tasks import open as open_task


def _rows(shared_data: Path, folder: str) -> list[dict]:
    return [json.loads(line) for line in open(shared_data / folder / "sample.jsonl", encoding="utf-8")]


# The hub layouts, filled from real rows. CareQA-Open, MedDialog, MedText and MIMIC-III have no
# sample in ../shared/data, so their fields get real text of the closest sample (noted per case).
def _careqa_open(shared):  # HPAI-BSC/CareQA CareQA_en_open: MedQA's (USMLE) questions and answers
    return [
        {"unique_id": str(i), "question": r["question"], "answer": r["answer"]}
        for i, r in enumerate(_rows(shared, "medqa"))
    ]


def _mediqa(shared):  # bigbio/mediqa_qa, mediqa_qa_source: the MEDIQA2019 XML sample, nested as the hub nests it
    return [
        {
            "QUESTION": {
                "QID": r["QID"],
                "QuestionText": r["QuestionText"],
                "AnswerList": [{"Answer": {"AID": a["AID"], "AnswerText": a["AnswerText"]}} for a in r["AnswerList"]],
            }
        }
        for r in _rows(shared, "mediqa2019_qa")
    ]


def _meddialog_raw(shared):  # bigbio/meddialog en source: LiveQA consumer questions and their answers
    return [
        {
            "description": r["Question"],
            "utterances": {"speaker": ["patient", "doctor"], "utterance": [r["Question"], r["Free_form_answer"]]},
        }
        for r in _rows(shared, "medlfqa_live_qa")
        if r["Free_form_answer"].strip()
    ]  # row 70 has none


def _meddialog_qsumm(shared):  # lighteval/med_dialog icliniq: MeQSum's question -> summary pairs
    return [{"src": r["CHQ"], "tgt": r["Summary"]} for r in _rows(shared, "meqsum")]


def _medtext(shared):  # BI55/MedText: MTS-Dialog's note sections as records
    return [{"Prompt": r["section_text"], "Completion": r["dialogue"]} for r in _rows(shared, "mts_dialog")]


def _mimic(shared):
    # dmacres/mimiciii-hospitalcourse-meta is credentialed: reports assembled from real note text
    # (MTS-Dialog sections) in the layouts their parser distinguishes (FINDINGS before or after
    # IMPRESSION, any case, sections ended by five spaces, a too-short findings section, none at all)
    texts = [r["section_text"].replace("     ", " ") for r in _rows(shared, "mts_dialog")[:60]]
    layouts = (
        lambda a, b: f"EXAMINATION: chest.     FINDINGS: {a}     IMPRESSION: {b}",
        lambda a, b: f"IMPRESSION: {b}     Findings: {a}",
        lambda a, b: f"{a} IMPRESSION: {b}     FINDINGS: no.",
        lambda a, b: f"impression: {b}\nfinding: {a}",
        lambda a, b: f"{a} {b}",
    )
    return [{"extractive_notes_summ": layouts[i % len(layouts)](texts[i], texts[i + 1])} for i in range(len(texts) - 1)]


def _same(folder):
    return lambda shared: _rows(shared, folder)


# careval benchmark -> (the authors' task YAML under lm_eval/tasks, rows in the hub layout)
AUTHORS_TASKS = {
    "careqa_open": ("careqa/careqa_open.yaml", _careqa_open),
    "mediqa2019": ("mediqa_qa2019/mediqa_qa2019.yaml", _mediqa),
    "meddialog_raw": ("meddialog/meddialog_raw_dialogues.yaml", _meddialog_raw),
    "meddialog_qsumm": ("meddialog/meddialog_qsumm.yaml", _meddialog_qsumm),
    "medtext": ("medtext/medtext.yaml", _medtext),
    "mts_dialog": ("mts_dialog/mts_dialog.yaml", _same("mts_dialog")),
    "olaph": ("olaph/olaph.yaml", _same("medlfqa_kqa_golden")),
    "olaph_kqa_golden": ("olaph/olaph.yaml", _same("medlfqa_kqa_golden")),
    "olaph_kqa_silver": ("olaph/olaph.yaml", _same("medlfqa_kqa_silver")),
    "olaph_live_qa": ("olaph/olaph.yaml", _same("medlfqa_live_qa")),
    "olaph_medication_qa": ("olaph/olaph.yaml", _same("medlfqa_medication_qa")),
    "mimic_iii_hospital_course": ("mimic_repsum/mimic_repsum.yaml", _mimic),
    "meqsum": ("meqsum/meqsum.yaml", _same("meqsum")),
}


class _FixedMetric:
    """Stands in for every evaluate metric and F1RadGraph: a fixed, finite value, so a NaN out of
    their process_results can only come from their own length rule."""

    VALUES: ClassVar[dict] = {"bleu": 0.5, "rouge1": 0.5, "rouge2": 0.5, "rougeL": 0.5, "scores": [0.5], "f1": [0.5]}

    def __init__(self, *args, **kwargs):
        pass

    def compute(self, *args, **kwargs):
        return dict(self.VALUES)

    def __call__(self, hyps, refs):
        return 0.5, None, None, None


def authors_task(yaml_path: str, data_file: Path, cache_dir: Path):
    """lm-eval's ConfigurableTask of the authors' YAML, its test split read from `data_file`."""
    import evaluate
    import lm_eval.tasks
    import radgraph
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    with mock.patch.object(evaluate, "load", _FixedMetric), mock.patch.object(radgraph, "F1RadGraph", _FixedMetric):
        config = load_yaml(Path(lm_eval.tasks.__file__).parent / yaml_path)
    for key in ("dataset_name", "training_split", "validation_split", "fewshot_split"):
        config.pop(key, None)
    config.update(
        dataset_path="json",
        test_split="test",
        dataset_kwargs={"data_files": {"test": str(data_file)}, "cache_dir": str(cache_dir)},
    )
    return ConfigurableTask(config=config)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, shared_data):
    """Per benchmark: lm-eval's task and careval's samples, both from one jsonl in the hub layout."""
    out = {}
    for name, (yaml_path, rows_of) in AUTHORS_TASKS.items():
        folder = tmp_path_factory.mktemp(name)
        data_file = folder / "test.jsonl"
        data_file.write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows_of(shared_data)), encoding="utf-8"
        )
        entry = get_benchmark(name, {"path": str(data_file)})
        samples = build_benchmark(entry, folder / f"{name}.parquet")
        out[name] = (authors_task(yaml_path, data_file, folder / "hf-cache"), entry, samples)
    return out


@pytest.mark.parametrize("name", sorted(AUTHORS_TASKS))
def test_prompt_is_the_authors_description_and_doc_to_text(prepared, name):
    task, entry, samples = prepared[name]
    docs = list(task.test_docs())
    theirs = [task.fewshot_context(doc, 0) for doc in docs]
    # lm-eval's own assembly, spelled out: the description, then the document's text
    assert theirs == [task.config.description + task.doc_to_text(doc) for doc in docs]
    assert len(docs) >= 9
    if name.startswith("olaph"):
        # the authors' process_docs keeps the first 10% of MedLFQA's rows; careval runs them all
        # (README: where careval differs from the paper)
        assert len(docs) == int(0.1 * len(task.dataset["test"]))
    if "id" in entry.fields:
        assert samples["id"].to_list()[: len(docs)] == [str(doc_id(name, doc)) for doc in docs]
        kept = list(range(len(docs)))
    else:
        # ids are <benchmark>-<row>; a row careval skips (counted) is one whose every metric the
        # authors' nanmean drops: MedLFQA's empty answers, a MIMIC report without a findings section
        kept = [int(i.rsplit("-", 1)[1]) for i in samples["id"]]
        kept = [i for i in kept if i < len(docs)]
        assert len(kept) >= 0.8 * len(docs)
        if name == "mimic_iii_hospital_course":
            assert len(kept) < len(docs)
    ours = open_task.generation_prompts(samples.head(len(kept)), entry.prompt)
    theirs = [theirs[i] for i in kept]
    mismatched = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert not mismatched, (
        f"{len(mismatched)} of {len(kept)} prompts differ, first row {mismatched[0]}:\n"
        f"careval: {ours[mismatched[0]]!r}\nlm-eval: {theirs[mismatched[0]]!r}"
    )
    assert len(ours) == len(theirs)
    # and the reference careval scores is their doc_to_target, as written
    assert samples["reference"].to_list()[: len(kept)] == [task.doc_to_target(docs[i]) for i in kept]


class _Reading:
    """A backend that answers each prompt with the text the chat model reads for it (its `format`), so the
    generation job's own path (careval.inference.batched_generations) shows what it sends."""

    def __init__(self, model):
        self.model, self.last_usage, self.last_status = model, (), ()  # as the Backend interface has them

    def generate(self, prompts, sampling, instruction=None):
        return [self.model.format(prompt, instruction) for prompt in prompts]


@pytest.mark.parametrize("name", ["olaph_live_qa", "careqa_open", "mimic_iii_hospital_course"])
def test_under_a_chat_template_the_description_is_the_system_turn_as_lm_eval_sends_it(prepared, chat_model, name):
    """lm-eval's --apply_chat_template: the task's description the system turn, doc_to_text the user turn."""
    from careval.inference import batched_generations

    backend, chat_template = chat_model
    task, entry, samples = prepared[name]
    docs = list(task.test_docs())
    kept = [int(i.rsplit("-", 1)[1]) for i in samples["id"]] if "id" not in entry.fields else range(len(docs))
    kept = [i for i in kept if i < len(docs)]
    theirs = [task.fewshot_context(docs[i], 0, apply_chat_template=True, chat_template=chat_template) for i in kept]
    rows = batched_generations(_Reading(backend), samples.head(len(kept)), entry, sampling_for(entry, {}), 4)
    assert rows["output"].to_list() == theirs
    assert theirs[0].startswith(f"<|im_start|>system\n{entry.instruction}")
    # the rows keep the prompt as the task wrote it, the instruction first
    assert rows["prompt"].to_list() == open_task.generation_prompts(samples.head(len(kept)), entry.prompt)


def doc_id(name: str, doc: dict):
    return {
        "careqa_open": lambda d: d["unique_id"],
        "mediqa2019": lambda d: d["QUESTION"]["QID"],
        "mts_dialog": lambda d: d["ID"],
        "meqsum": lambda d: d["File"],
    }[name](doc)


@pytest.mark.parametrize("name", sorted(AUTHORS_TASKS))
def test_stop_strings_are_the_authors_until(prepared, name):
    task, entry, _ = prepared[name]
    until = task.config.generation_kwargs["until"]
    assert list(entry.stop) == until
    # what the inference job decodes with, from the config's defaults (generation.stop: [])
    assert list(sampling_for(entry, {"max_new_tokens": 8, "stop": []}).stop) == until
    # a config's own setting wins over the catalogue's
    assert sampling_for(get_benchmark(name, {"stop": ["###"]}), {"stop": []}).stop == ("###",)
    assert sampling_for(get_benchmark(name, {"stop": []}), {"stop": ["x"]}).stop == ()


@pytest.mark.parametrize("name", sorted(AUTHORS_TASKS))
def test_text_metrics_skip_the_samples_the_authors_process_results_skip(prepared, name):
    """Their process_results return NaN for every metric when the output or the reference is shorter
    than a per-task length (1, 5 or 10 characters); careval's text metrics mark those too_short."""
    import math

    import numpy as np

    task, entry, samples = prepared[name]
    sample = samples.head(1)
    doc = next(doc for doc in task.test_docs() if task.doc_to_target(doc) == sample["reference"][0])
    outputs = ["abcdefghijkl"[:n] for n in (0, 1, 2, 4, 5, 6, 9, 10, 11, 12)]
    # most of their utils write np.NAN, which numpy 2 removed (their NaN path raises AttributeError)
    with mock.patch.object(np, "NAN", np.nan, create=True):
        theirs = [all(math.isnan(v) for v in task.config.process_results(doc, [out]).values()) for out in outputs]
    ours = []
    for out in outputs:
        rows = open_task.generation_rows(sample, ["p"], [out])
        scores = score_text("rouge", sample, rows, min_chars=entry.min_chars)
        ours.append(all(status != "ok" for status in scores["status"]))
    assert ours == theirs
    assert any(theirs) and not all(theirs)
