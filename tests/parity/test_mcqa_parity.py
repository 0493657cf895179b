"""careval's MCQA benchmarks against lm-eval's own tasks (the authors' files), on real rows and a real model.

For each benchmark, lm-eval 0.4.13 runs its task file (included by a local task YAML whose dataset
is the same rows of ../shared/data, written into the fields its doc_to_text reads) with its HFLM on
SmolLM2-135M-Instruct; careval runs the catalogue entry (normalisation, tasks/mcqa, the hf backend)
on the same rows. Per document: the same prompt and continuations, |delta loglik| < 1e-4 for every
choice and the same acc and acc_norm. Prints both accuracies and both scoring times (`pytest -s`).

The rows: the first 30 of each sample, but the first 10 of MedQA and PubMedQA, whose prompts are long (vignettes and
abstracts): lm-eval scores every choice of a document from scratch, and at 30 rows each those two were 53.6k of the
73.8k tokens it scored (SmolLM2's tokenizer). Their first 10 hold the longest prompt of the 30 (MedQA's
4th row, PubMedQA's 8th, 485 tokens with its choice) and PubMedQA's three answers.
"""

from __future__ import annotations

import time

import polars as pl
import pytest
from lm_eval_reference import assert_same_documents

from careval.backends.hf.backend import HFBackend
from careval.datasets.normalise import normalise
from careval.datasets.registry import get_benchmark
from careval.inference import loglik_requests, score_logliks
from careval.tasks.mcqa import score_mcqa
from support.lm_eval_docs import LOCAL_DOCS, raw_rows, write_local_tasks

pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

N_ROWS = 30
ROWS = {"medqa": 10, "pubmedqa": 10}  # the long prompts' benchmarks (the module's docstring); the others N_ROWS
BATCH_SIZE = 8
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def runs(shared_data, demo_model_dirs, tmp_path_factory):
    """benchmark -> (careval's samples and log-likelihoods, lm-eval's logged samples, seconds of each)."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    model_dir = demo_model_dirs["smollm2-135m-instruct"]
    folder = tmp_path_factory.mktemp("lm_eval_tasks")
    for benchmark in LOCAL_DOCS:
        write_local_tasks(shared_data, folder, ROWS.get(benchmark, N_ROWS), benchmarks=(benchmark,))
    raw = {benchmark: raw_rows(shared_data, benchmark, ROWS.get(benchmark, N_ROWS)) for benchmark in LOCAL_DOCS}

    ours = HFBackend.load("smollm2", str(model_dir), dtype="float32", batch_size=BATCH_SIZE)
    theirs = HFLM(pretrained=str(model_dir), backend="causal", device="cpu", dtype="float32", batch_size=BATCH_SIZE)
    manager = TaskManager(include_path=str(folder), include_defaults=False)
    out = {}
    for benchmark, docs in LOCAL_DOCS.items():
        entry = get_benchmark(benchmark, docs.overrides)
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
@pytest.mark.parametrize("benchmark", list(LOCAL_DOCS))
def test_same_prompts_logliks_and_predictions_as_lm_eval(runs, benchmark):
    samples, logliks, logged, careval_s, lm_eval_s = runs[benchmark]
    rows = ROWS.get(benchmark, N_ROWS)
    assert len(logged) == samples.height == rows
    scores = score_mcqa(samples, logliks)
    values = {(r["id"], r["metric"]): r["value"] for r in scores.iter_rows(named=True)}
    worst = assert_same_documents(samples, logliks, values, logged, ("acc", "acc_norm"), TOLERANCE)
    ours = {m: scores.filter(pl.col("metric") == m)["value"].mean() for m in ("acc", "acc_norm")}
    theirs = {m: sum(d[m] for d in logged) / len(logged) for m in ("acc", "acc_norm")}
    print(
        f"\n{benchmark} ({get_benchmark(benchmark).mcqa_style}, {rows} rows): careval acc {ours['acc']:.4f} "
        f"acc_norm {ours['acc_norm']:.4f} | lm-eval acc {theirs['acc']:.4f} acc_norm {theirs['acc_norm']:.4f} | "
        f"max |delta loglik| {worst:.2e} | scoring careval {careval_s:.1f}s, lm-eval simple_evaluate {lm_eval_s:.1f}s"
    )
