"""The real rows of ../shared/data as lm-eval documents, and local lm-eval task YAMLs that read them: lm-eval's own
task file of a benchmark, included unchanged but for its dataset (`dataset_path: json`, the rows as `data_files`).

The parity tests (tests/parity) and the speed benchmark (tests/backends/test_shared_prefix_speed.py) point lm-eval,
and careval's `lm_eval_task:` benchmarks, at the same rows this way; no hub.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

# lm-eval 0.4.13's task file of each benchmark (lm_eval/tasks/...)
TASK_FILES = {
    "medqa": "medqa/medqa.yaml",
    "medmcqa": "medmcqa/medmcqa.yaml",
    "pubmedqa": "pubmedqa/pubmedqa.yaml",
    "mmlu_anatomy": "mmlu/default/mmlu_anatomy.yaml",
    "careqa_en": "careqa/careqa_en.yaml",
    "careqa_es": "careqa/careqa_es.yaml",
    "headqa": "headqa/headqa_en.yaml",
    "med_prescriptions_easy": "med_prescriptions/med_prescriptions_easy.yaml",
    "med_prescriptions_hard": "med_prescriptions/med_prescriptions_hard.yaml",
    "med_text_classification_easy": "med_text_classification/med_text_classification_easy.yaml",
    "med_text_classification_hard": "med_text_classification/med_text_classification_hard.yaml",
}


def task_file(benchmark: str) -> Path:
    import lm_eval.tasks

    return Path(lm_eval.tasks.__file__).parent / TASK_FILES[benchmark]


def write_local_task(
    name: str,
    benchmark: str,
    data_file: Path,
    folder: Path,
    dataset_path: str = "json",
    metrics=("acc", "acc_norm"),
    overrides: dict | None = None,
) -> Path:
    """lm-eval's task file, included unchanged but for its dataset (the local rows as the test split) and
    `overrides` (keys of the task file replaced)."""
    task = {
        "include": str(task_file(benchmark)),
        "task": name,
        "tag": [],
        "dataset_path": dataset_path,
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"test": str(data_file)}},
        "test_split": "test",
        "validation_split": None,
        "training_split": None,
        "fewshot_split": None,
        # acc_norm too where the file reports acc only (pubmedqa, mmlu): lm-eval computes both the same way
        "metric_list": [{"metric": metric, "aggregation": "mean", "higher_is_better": True} for metric in metrics],
        **(overrides or {}),
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    return path


def _medqa(row: dict) -> dict:
    return {
        "sent1": row["question"],
        **{f"ending{i}": row["options"][k] for i, k in enumerate("ABCD")},
        "label": "ABCD".index(row["answer_idx"]),
    }


def _medmcqa(row: dict) -> dict:
    # the Medpredict re-host writes "A. text": the option is what follows the letter (MedMCQA's opa..opd)
    options = []
    for letter, choice in zip("ABCD", row["choices"]):
        assert choice.startswith(f"{letter}. "), choice
        options.append(choice[len(f"{letter}. ") :])
    return {"question": row["question"], **dict(zip(["opa", "opb", "opc", "opd"], options)), "cop": row["answer"]}


def _pubmedqa(row: dict) -> dict:
    return {key: row[key] for key in ("pubid", "QUESTION", "CONTEXTS", "final_decision")}


def _mmlu(row: dict) -> dict:
    return {"question": row["question"], "choices": [row[f"choice{i}"] for i in range(4)], "answer": int(row["answer"])}


def _headqa(row: dict) -> dict:
    return {"qtext": row["qtext"], "ra": int(row["ra"]), "answers": row["answers"]}


@dataclass(frozen=True)
class LocalDocs:
    """A benchmark's rows in ../shared/data written in the fields its lm-eval task file reads."""

    data: str  # folder of ../shared/data
    overrides: dict  # careval's config keys of the catalogue entry that reads the same rows (besides path)
    to_doc: Callable[[dict], dict]  # a raw row in lm-eval's fields
    keep: Callable[[dict], bool] = lambda row: True


LOCAL_DOCS = {
    "medqa": LocalDocs("medqa", {}, _medqa),
    "medmcqa": LocalDocs("medmcqa", {"format": "medpredict"}, _medmcqa),
    "pubmedqa": LocalDocs("pubmedqa", {}, _pubmedqa),
    "mmlu_anatomy": LocalDocs(
        "mmlu_medical", {"format": "csv_rehost"}, _mmlu, keep=lambda row: row["subject"] == "anatomy"
    ),
    "headqa": LocalDocs("headqa", {}, _headqa),
}


def raw_rows(shared_data: Path, benchmark: str, n: int) -> list[dict]:
    """The first `n` rows of the benchmark's sample (of its subject, for an MMLU subject)."""
    docs = LOCAL_DOCS[benchmark]
    lines = (shared_data / docs.data / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [row for row in map(json.loads, lines) if docs.keep(row)][:n]
    assert len(rows) == n
    return rows


def write_local_tasks(
    shared_data: Path,
    folder: Path,
    n: int,
    prefix: str = "careval_parity_",
    benchmarks=tuple(LOCAL_DOCS),
    overrides: dict | None = None,
) -> dict[str, str]:
    """A local task YAML (with its first `n` rows, in lm-eval's fields; `overrides` of its keys) per benchmark of
    LOCAL_DOCS in `folder`: benchmark -> the task's name."""
    names = {}
    for benchmark in benchmarks:
        docs = LOCAL_DOCS[benchmark]
        data_file = folder / f"{benchmark}.jsonl"
        rows = raw_rows(shared_data, benchmark, n)
        data_file.write_text("".join(json.dumps(docs.to_doc(row)) + "\n" for row in rows), encoding="utf-8")
        names[benchmark] = f"{prefix}{benchmark}"
        write_local_task(names[benchmark], benchmark, data_file, folder, overrides=overrides)
    return names
