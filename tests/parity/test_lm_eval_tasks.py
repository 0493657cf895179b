"""`lm_eval_task:` benchmarks against lm-eval 0.4.13's own run of the same task files, document by document.

Eight task YAMLs of the test's own read real rows of ../shared/data (`dataset_path: json`, `data_files`): five
include lm-eval's multiple-choice task files unchanged but for their dataset (the authors' medqa_4options and
medmcqa, headqa_en, pubmedqa, mmlu_anatomy), and three are written here on MeQSum's rows, one per other output
type careval runs (generate_until with exact_match and lm-eval's corpus BLEU, loglikelihood with perplexity and
is_greedy's acc, loglikelihood_rolling with the three rolling perplexities). careval runs each as a benchmark of a
config (normalisation by lm-eval's TaskManager, careval's hf backend and shared-prefix scoring, the lm_eval
family's scoring); lm-eval runs all of them once with its HFLM and `log_samples`, on the same tiny model (a
random 2-layer Llama whose tokenizer adds no BOS, so lm-eval's rolling windows are careval's). Per document:
the same requests (contexts, continuations, `until`), log-likelihoods within 1e-4, the same generation, gold
and per-document metric values; per task, lm-eval's corpus values.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import polars as pl
import pytest
import yaml
from lm_eval_reference import assert_same_documents

from careval.datasets import build_benchmark, get_benchmark
from careval.inference import loglik_requests, run_inference, sampling_for
from careval.schema import with_schema_defaults
from careval.scoring import score_benchmark
from support.lm_eval_docs import LOCAL_DOCS, write_local_tasks
from support.specs import local_model_spec
from support.tiny_models import build_llama

pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")
pytestmark = pytest.mark.slow

N_DOCS = 4
TOLERANCE = 1e-4
BATCH_SIZE = 4
MEQSUM_FIELDS = ("CHQ", "Summary")


def _metrics(*specs: tuple[str, str, bool]) -> list[dict]:
    """A task file's metric_list: (metric, aggregation, higher_is_better) each."""
    return [{"metric": m, "aggregation": a, "higher_is_better": h} for m, a, h in specs]


OWN_TASKS = {
    "careval_meqsum_generate": {
        "output_type": "generate_until",
        "doc_to_text": "Question: {{CHQ[:200]}}\nSummary:",
        "doc_to_target": "{{Summary}}",
        "generation_kwargs": {"until": ["\n", "."], "max_gen_toks": 8, "do_sample": False},
        "metric_list": _metrics(("exact_match", "mean", True), ("bleu", "bleu", True)),
    },
    "careval_meqsum_loglikelihood": {
        "output_type": "loglikelihood",
        "doc_to_text": "{{Summary.split(' ')[:3]|join(' ')}}",
        "doc_to_target": "{{' ' + Summary.split(' ')[3:]|join(' ')}}",
        "metric_list": _metrics(("perplexity", "perplexity", False), ("acc", "mean", True)),
    },
    "careval_meqsum_rolling": {
        "output_type": "loglikelihood_rolling",
        "doc_to_text": "",
        "doc_to_target": "{{Summary}}",
    },
}


def _write_own_tasks(shared_data: Path, folder: Path) -> None:
    rows = [json.loads(line) for line in (shared_data / "meqsum" / "sample.jsonl").read_text().splitlines()][:N_DOCS]
    data = folder / "meqsum.jsonl"
    data.write_text("".join(json.dumps({k: r[k] for k in MEQSUM_FIELDS}) + "\n" for r in rows), encoding="utf-8")
    for name, task in OWN_TASKS.items():
        config = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}}}
        config |= {"test_split": "test", **task}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama (4096 positions: MedQA's questions are ~1,500 of its byte-level tokens) without BOS."""
    out = tmp_path_factory.mktemp("tiny-llama-no-bos")
    sizes = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1)
    build_llama(out, **sizes, max_position_embeddings=4096)
    tokenizer = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["post_processor"] = None  # like SmolLM2: no BOS in front
    (out / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def runs(shared_data, model_dir, tmp_path_factory):
    """task -> (careval's samples, log-likelihoods, generations, lm_eval scores; lm-eval's logged samples and
    results), for every task of the module."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    folder = tmp_path_factory.mktemp("lm_eval_tasks")
    tasks = list(write_local_tasks(shared_data, folder, N_DOCS, prefix="careval_lm_eval_").values())
    _write_own_tasks(shared_data, folder)
    tasks += list(OWN_TASKS)
    out = tmp_path_factory.mktemp("careval")
    spec = local_model_spec("tiny", model_dir, dtype="float32", batch_size=BATCH_SIZE)
    generation = with_schema_defaults({}, "sampling")
    ours = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CAREVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
        for task in tasks:
            entry = get_benchmark(task, {"lm_eval_task": task, "lm_eval_include": str(folder)})
            paths = {kind: out / f"{task}.{kind}.parquet" for kind in ("samples", "loglik", "generations", "lm_eval")}
            build_benchmark(entry, paths["samples"])
            sampling = sampling_for(entry, generation) if entry.generates else None
            generations = paths["generations"] if entry.generates else None
            run_inference(
                paths["samples"], entry, spec, sampling, paths["loglik"], generations, request_batch=BATCH_SIZE
            )
            score_benchmark(
                paths["samples"],
                {"lm_eval": paths["lm_eval"]},
                generations_path=generations,
                loglik_path=paths["loglik"],
            )
            ours[task] = (entry, {kind: pl.read_parquet(path) for kind, path in paths.items() if path.exists()})
    theirs = HFLM(pretrained=str(model_dir), backend="causal", device="cpu", dtype="float32", batch_size=BATCH_SIZE)
    result = lm_eval.simple_evaluate(
        model=theirs,
        tasks=tasks,
        task_manager=TaskManager(include_path=str(folder), include_defaults=False),
        batch_size=BATCH_SIZE,
        log_samples=True,
        bootstrap_iters=0,
    )
    logged = {task: sorted(result["samples"][task], key=lambda s: s["doc_id"]) for task in tasks}
    return ours, logged, result["results"]


def _task(runs, task: str):
    """careval's benchmark of `task` and its frames, lm-eval's logged documents and aggregated results of it."""
    ours, logged, results = runs
    entry, frames = ours[task]
    return entry, frames, logged[task], results[task]


def _values(scores: pl.DataFrame) -> dict[tuple[str, str], float]:
    return {
        (r["id"], r["metric"]): r["value"] for r in scores.filter(pl.col("level") == "sample").iter_rows(named=True)
    }


def _corpus(scores: pl.DataFrame) -> dict[str, float]:
    return {r["metric"]: r["value"] for r in scores.filter(pl.col("level") == "corpus").iter_rows(named=True)}


@pytest.mark.parametrize("benchmark", list(LOCAL_DOCS))
def test_multiple_choice_documents_and_metrics_are_lm_evals(runs, benchmark):
    entry, frames, logged, results = _task(runs, f"careval_lm_eval_{benchmark}")
    assert entry.task == "mcqa" and entry.lm_eval is not None and entry.lm_eval.metrics == ("acc", "acc_norm")
    values = _values(frames["lm_eval"])
    worst = assert_same_documents(frames["samples"], frames["loglik"], values, logged, ("acc", "acc_norm"), TOLERANCE)
    # the lm_eval family's mean is lm-eval's aggregated value
    for metric in ("acc", "acc_norm"):
        mean = sum(values[(str(i), metric)] for i in range(N_DOCS)) / N_DOCS
        assert mean == pytest.approx(results[f"{metric},none"])
    print(f"\n{benchmark}: {N_DOCS} documents, max |delta loglik| {worst:.1e}, acc {results['acc,none']:.2f}")


def test_generate_until_documents_generations_and_metrics_are_lm_evals(runs):
    entry, frames, logged, results = _task(runs, "careval_meqsum_generate")
    assert (entry.task, entry.stop, entry.max_new_tokens) == ("open", ("\n", "."), 8)
    # lm-eval's BLEU is no careval BLEU: written under lm-eval's results key
    assert entry.lm_eval is not None and entry.lm_eval.metrics == ("exact_match", "bleu,none")
    values, generations = _values(frames["lm_eval"]), frames["generations"]
    for doc in logged:
        sample_id = str(doc["doc_id"])
        context, gen_kwargs = doc["arguments"][0]
        assert generations.filter(pl.col("id") == sample_id)["prompt"].item() == context
        meta = json.loads(frames["samples"].filter(pl.col("id") == sample_id)["meta"].item())["lm_eval"]
        assert meta["requests"] == [[context, gen_kwargs]]
        assert generations.filter(pl.col("id") == sample_id)["output"].item() == doc["filtered_resps"][0]
        assert values[(sample_id, "exact_match")] == doc["exact_match"]
    assert _corpus(frames["lm_eval"])["bleu,none"] == pytest.approx(results["bleu,none"])
    print(f"\n{entry.name}: {N_DOCS} generations equal, exact_match {results['exact_match,none']:.2f}, "
          f"BLEU {results['bleu,none']:.3f}")  # fmt: skip


def test_loglikelihood_documents_greedy_flags_and_perplexity_are_lm_evals(runs):
    entry, frames, logged, results = _task(runs, "careval_meqsum_loglikelihood")
    assert entry.task == "likelihood" and not entry.generates
    logliks, values = frames["loglik"], _values(frames["lm_eval"])
    for doc in logged:
        sample_id = str(doc["doc_id"])
        mine = logliks.filter(pl.col("id") == sample_id)
        request = mine.filter(pl.col("kind") == "continuation")
        assert [tuple(doc["arguments"][0])] == list(zip(request["context"], request["continuation"]))
        ll, is_greedy = doc["filtered_resps"][0]
        assert request["loglik"].item() == pytest.approx(ll, abs=TOLERANCE)
        assert mine.filter(pl.col("kind") == "greedy")["loglik"].item() == float(is_greedy)
        assert values[(sample_id, "acc")] == doc["acc"]
        assert values[(sample_id, "perplexity")] == pytest.approx(math.exp(-doc["perplexity"]), rel=1e-4)
    assert _corpus(frames["lm_eval"])["perplexity"] == pytest.approx(results["perplexity,none"], rel=1e-4)
    worst = max(
        abs(a - d["filtered_resps"][0][0])
        for a, d in zip(logliks.filter(pl.col("kind") == "continuation")["loglik"], logged)
    )
    print(f"\n{entry.name}: {N_DOCS} documents, max |delta loglik| {worst:.1e}, acc {results['acc,none']:.2f}, "
          f"perplexity {results['perplexity,none']:.1f}")  # fmt: skip


def test_rolling_documents_and_perplexities_are_lm_evals(runs):
    entry, frames, logged, results = _task(runs, "careval_meqsum_rolling")
    assert entry.lm_eval is not None and entry.lm_eval.metrics == (
        "word_perplexity",
        "byte_perplexity",
        "bits_per_byte",
    )
    logliks, values = frames["loglik"], _values(frames["lm_eval"])
    for doc in logged:
        sample_id = str(doc["doc_id"])
        mine = logliks.filter(pl.col("id") == sample_id)
        assert mine["continuation"].to_list() == [doc["arguments"][0][0]] and mine["kind"].to_list() == ["reference"]
        assert mine["loglik"].item() == pytest.approx(doc["filtered_resps"][0], abs=1e-3)
        ll, words = doc["word_perplexity"]
        assert values[(sample_id, "word_perplexity")] == pytest.approx(math.exp(-ll / words), rel=1e-3)
    corpus = _corpus(frames["lm_eval"])
    for metric in ("word_perplexity", "byte_perplexity", "bits_per_byte"):
        assert corpus[metric] == pytest.approx(results[f"{metric},none"], rel=1e-3)
    worst = max(abs(a - d["filtered_resps"][0]) for a, d in zip(logliks["loglik"], logged))
    print(f"\n{entry.name}: {N_DOCS} documents, max |delta loglik| {worst:.1e}, word perplexity "
          f"{corpus['word_perplexity']:.1f} (lm-eval {results['word_perplexity,none']:.1f})")  # fmt: skip


def test_a_tasks_facts_are_read_once_then_from_the_cache_until_its_files_change(runs, tmp_path, monkeypatch):
    from careval.datasets import lm_eval_tasks

    task = "careval_meqsum_generate"
    folder = next(iter(runs[0].values()))[0].lm_eval.include
    monkeypatch.setenv("CAREVAL_CACHE", str(tmp_path))
    read = []
    real = lm_eval_tasks._read_facts
    monkeypatch.setattr(lm_eval_tasks, "_read_facts", lambda *args: read.append(args) or real(*args))
    first = lm_eval_tasks.task_source(task, folder, "benchmarks.x")
    assert lm_eval_tasks.task_source(task, folder, "benchmarks.x") == first and len(read) == 1
    path = Path(folder) / f"{task}.yaml"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))  # an edited task file
    assert lm_eval_tasks.task_source(task, folder, "benchmarks.x") == first and len(read) == 2


def test_the_worked_example_scores_alike_as_a_config_benchmark_and_as_an_lm_eval_task(monkeypatch, tmp_path):
    """resources/examples/own_benchmarks.yaml: ward_qa (the config's keys) and ward_qa_lm (lm-eval's task file)
    read the same ten rows and send the same requests, gold included."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the task file's data_files: from the checkout
    monkeypatch.setenv("CAREVAL_CACHE", str(tmp_path / "cache"))
    own = yaml.safe_load(Path("resources/examples/own_benchmarks.yaml").read_text())["benchmarks"]
    entries = {name: get_benchmark(name, entry) for name, entry in own.items()}
    samples = {name: build_benchmark(entry, tmp_path / f"{name}.parquet") for name, entry in entries.items()}
    ours, theirs = (loglik_requests(samples[name], entries[name]) for name in ("ward_qa", "ward_qa_lm"))
    assert ours.select("context", "continuation").equals(theirs.select("context", "continuation"))
    assert samples["ward_qa"]["answer"].to_list() == samples["ward_qa_lm"]["answer"].to_list()
    assert samples["ward_qa_lm"]["id"].to_list() == [str(i) for i in range(10)]  # lm-eval's doc ids


@pytest.mark.parametrize(
    ("task", "extra", "message"),
    [
        ("headqa_enn", None, "benchmarks.x.lm_eval_task: 'headqa_enn' is no task, group or tag of lm-eval (close: "),
        ("careval_repeats", {"repeats": 3}, "benchmarks.x.lm_eval_task: 'careval_repeats' repeats its generation 3"),
    ],
)
def test_a_task_careval_cannot_run_is_one_line_naming_it(tmp_path, monkeypatch, task, extra, message):
    from careval.datasets.definition import BenchmarkDefinitionError

    monkeypatch.setenv("CAREVAL_CACHE", str(tmp_path / "cache"))
    if extra is not None:
        config = {"task": task, "dataset_path": "json", "output_type": "generate_until", "doc_to_text": "{{q}}"}
        (tmp_path / f"{task}.yaml").write_text(yaml.safe_dump({**config, "doc_to_target": "{{a}}", **extra}))
    with pytest.raises(BenchmarkDefinitionError) as error:
        get_benchmark("x", {"lm_eval_task": task, "lm_eval_include": str(tmp_path)})
    assert str(error.value).startswith(message) and "\n" not in str(error.value), str(error.value)
