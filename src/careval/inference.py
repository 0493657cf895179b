"""Run one model on one benchmark: generations for open tasks, log-likelihoods for every task."""
from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from careval.backends import load_backend
from careval.backends.base import Backend, Sampling
from careval.datasets.registry import Benchmark
from careval.datasets.schema import CHOICE_TASKS
from careval.tasks import mcqa, open as open_task

LOGLIK_SCHEMA = {"id": pl.String, "kind": pl.String, "option": pl.Int64,
                 "context": pl.String, "continuation": pl.String, "loglik": pl.Float64}


def sampling_for(benchmark: Benchmark, generation: dict) -> Sampling:
    settings = dict(generation)
    if benchmark.max_new_tokens:
        settings["max_new_tokens"] = benchmark.max_new_tokens
    return Sampling(**settings)


def loglik_requests(samples: pl.DataFrame, benchmark: Benchmark) -> pl.DataFrame:
    """Options (MCQA, prescription, loglik-mode classification) or the reference (open, for perplexity);
    none for tasks scored on the generation alone (relation extraction, generate-mode classification)."""
    if benchmark.task == "open":
        return open_task.loglik_requests(samples, benchmark.prompt)
    if benchmark.task in CHOICE_TASKS and not benchmark.generates:
        return mcqa.loglik_requests(samples, benchmark.prompt)
    return pl.DataFrame(schema={name: dtype for name, dtype in LOGLIK_SCHEMA.items() if name != "loglik"})


def generate(backend: Backend, samples: pl.DataFrame, benchmark: Benchmark, generation: dict) -> pl.DataFrame:
    prompts = open_task.generation_prompts(samples, benchmark.prompt)
    start = time.perf_counter()
    outputs = backend.generate(prompts, sampling_for(benchmark, generation))
    print(f"generated {len(outputs)} outputs on {benchmark.name} in {time.perf_counter() - start:.1f}s")
    return open_task.generation_rows(samples, prompts, outputs)


def score_logliks(backend: Backend, requests: pl.DataFrame) -> pl.DataFrame:
    """Conditional requests go to `loglikelihood`, whole-reference ones to `loglikelihood_rolling`."""
    start = time.perf_counter()
    values = [float("nan")] * requests.height
    kinds = requests["kind"].to_list()
    conditional = [i for i, kind in enumerate(kinds) if kind != "reference"]
    rolling = [i for i, kind in enumerate(kinds) if kind == "reference"]
    if conditional:
        pairs = [(requests["context"][i], requests["continuation"][i]) for i in conditional]
        for i, value in zip(conditional, backend.loglikelihood(pairs)):
            values[i] = value
    if rolling:
        for i, value in zip(rolling, backend.loglikelihood_rolling([requests["continuation"][i] for i in rolling])):
            values[i] = value
    print(f"scored {requests.height} log-likelihood requests in {time.perf_counter() - start:.1f}s")
    return requests.with_columns(pl.Series("loglik", values, dtype=pl.Float64))


def run_inference(samples_path: Path, benchmark: Benchmark, spec: dict, generation: dict,
                  loglik_path: Path, generations_path: Path | None = None) -> None:
    """Load the model once; write its log-likelihoods and, when asked, its generations."""
    samples = pl.read_parquet(samples_path)
    start = time.perf_counter()
    backend = load_backend(spec)
    # one line per load: the logs count how often a model was loaded (README, cluster section)
    print(f"loaded model {spec['name']} ({spec.get('backend', 'hf')}, gpus={spec.get('gpus', 0)}) "
          f"in {time.perf_counter() - start:.1f}s")
    outputs = {loglik_path: score_logliks(backend, loglik_requests(samples, benchmark))}
    if generations_path is not None:
        outputs[generations_path] = generate(backend, samples, benchmark, generation)
    for path, frame in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(path)
