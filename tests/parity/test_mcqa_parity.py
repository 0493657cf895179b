"""careval's MCQA benchmarks against lm-eval's own tasks (the authors' files), on real rows and a real model.

For each benchmark, lm-eval 0.4.13 runs its task file (included by a local task YAML whose dataset
is the same rows of ../shared/data, written into the fields its doc_to_text reads) with its HFLM on
SmolLM2-135M-Instruct; careval runs the catalogue entry (normalisation, tasks/mcqa, the hf backend)
on the same rows. Per document: the same prompt and continuations, |delta loglik| < 1e-4 for every
choice and the same acc and acc_norm. Prints both accuracies and both scoring times (`pytest -s`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from lm_eval_reference import assert_same_documents, write_local_task

from careval.backends.hf.backend import HFBackend
from careval.datasets.normalise import normalise
from careval.datasets.registry import get_benchmark
from careval.inference import loglik_requests, score_logliks
from careval.tasks.mcqa import score_mcqa

pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

N_ROWS = 30
BATCH_SIZE = 8
TOLERANCE = 1e-4


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
class Case:
    data: str  # folder of ../shared/data
    overrides: dict  # careval's config overrides of the catalogue entry (besides path)
    to_doc: Callable[[dict], dict]  # a raw row in lm-eval's fields
    keep: Callable[[dict], bool] = lambda row: True


CASES = {
    "medqa": Case("medqa", {}, _medqa),
    "medmcqa": Case("medmcqa", {"format": "medpredict"}, _medmcqa),
    "pubmedqa": Case("pubmedqa", {}, _pubmedqa),
    "mmlu_anatomy": Case("mmlu_medical", {"format": "csv_rehost"}, _mmlu, keep=lambda row: row["subject"] == "anatomy"),
    "headqa": Case("headqa", {}, _headqa),
}


def _rows(shared_data: Path, case: Case) -> list[dict]:
    lines = (shared_data / case.data / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [row for row in map(json.loads, lines) if case.keep(row)][:N_ROWS]
    assert len(rows) == N_ROWS
    return rows


@pytest.fixture(scope="module")
def runs(shared_data, demo_model_dirs, tmp_path_factory):
    """benchmark -> (careval's samples and log-likelihoods, lm-eval's logged samples, seconds of each)."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    model_dir = demo_model_dirs["smollm2-135m-instruct"]
    folder = tmp_path_factory.mktemp("lm_eval_tasks")
    raw = {benchmark: _rows(shared_data, case) for benchmark, case in CASES.items()}
    for benchmark, case in CASES.items():
        data_file = folder / f"{benchmark}.jsonl"
        data_file.write_text("".join(json.dumps(case.to_doc(row)) + "\n" for row in raw[benchmark]), encoding="utf-8")
        write_local_task(f"careval_parity_{benchmark}", benchmark, data_file, folder)

    ours = HFBackend.load("smollm2", str(model_dir), dtype="float32", batch_size=BATCH_SIZE)
    theirs = HFLM(pretrained=str(model_dir), backend="causal", device="cpu", dtype="float32", batch_size=BATCH_SIZE)
    manager = TaskManager(include_path=str(folder), include_defaults=False)
    out = {}
    for benchmark, case in CASES.items():
        entry = get_benchmark(benchmark, case.overrides)
        samples = normalise(raw[benchmark], entry)
        requests = loglik_requests(samples, entry)
        start = time.perf_counter()
        logliks = score_logliks(ours, requests)
        careval_s = time.perf_counter() - start

        start = time.perf_counter()
        result = lm_eval.simple_evaluate(
            model=theirs,
            tasks=[f"careval_parity_{benchmark}"],
            task_manager=manager,
            batch_size=BATCH_SIZE,
            log_samples=True,
            bootstrap_iters=0,
        )
        lm_eval_s = time.perf_counter() - start
        logged = sorted(result["samples"][f"careval_parity_{benchmark}"], key=lambda s: s["doc_id"])
        out[benchmark] = (samples, logliks, logged, careval_s, lm_eval_s)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", list(CASES))
def test_same_prompts_logliks_and_predictions_as_lm_eval(runs, benchmark):
    samples, logliks, logged, careval_s, lm_eval_s = runs[benchmark]
    assert len(logged) == samples.height == N_ROWS
    scores = score_mcqa(samples, logliks)
    values = {(r["id"], r["metric"]): r["value"] for r in scores.iter_rows(named=True)}
    worst = assert_same_documents(samples, logliks, values, logged, ("acc", "acc_norm"), TOLERANCE)
    ours = {m: scores.filter(pl.col("metric") == m)["value"].mean() for m in ("acc", "acc_norm")}
    theirs = {m: sum(d[m] for d in logged) / len(logged) for m in ("acc", "acc_norm")}
    print(
        f"\n{benchmark} ({get_benchmark(benchmark).mcqa_style}, {N_ROWS} rows): careval acc {ours['acc']:.4f} "
        f"acc_norm {ours['acc_norm']:.4f} | lm-eval acc {theirs['acc']:.4f} acc_norm {theirs['acc_norm']:.4f} | "
        f"max |delta loglik| {worst:.2e} | scoring careval {careval_s:.1f}s, lm-eval simple_evaluate {lm_eval_s:.1f}s"
    )
