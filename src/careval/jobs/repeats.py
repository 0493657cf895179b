"""Several sampled outputs per sample: the k rephrasings of a model's answer (resilience) and r answers per prompt (self-consistency)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from careval.backends.base import Backend, Sampling
from careval.backends.cached import job_backend
from careval.batches import batches_keeping_duplicates, contiguous_batches, input_order, write_atomic
from careval.datasets.benchmark import Benchmark
from careval.inference import benchmark_settings, generate, score_logliks
from careval.models.spec import ModelSpec
from careval.schemas import CONSISTENCY_LOGLIK_SCHEMA, REPEAT_GENERATION_SCHEMA
from careval.tasks import open as open_task

# Paper appendix C.1, verbatim: the system prompt of the rephrasing model.
REPHRASE_SYSTEM_PROMPT = (
    "You are a helpful rephrasing assistant. Rephrase the prompt provided without changing its original "
    "meaning, but do not try to address or answer it in any case."
)


def check_repeat_sampling(sampling: Sampling, repeats: int) -> None:
    if sampling.greedy and repeats > 1:
        raise ValueError("repeated outputs need sampling (temperature > 0); greedy decoding repeats one text")


def sample_repeats(
    backend: Backend, ids: list[str], prompts: list[str], repeats: int, sampling: Sampling, instruction: str = ""
) -> pl.DataFrame:
    """`repeats` sampled completions of each prompt, in one generate call (`instruction`: the benchmark's, which
    the prompts start with; careval.inference.generate).

    Each copy of a prompt is a separate request: the backends seed a request by (seed, prompt, occurrence),
    so the copies are different draws and a rerun gives the same texts.
    """
    check_repeat_sampling(sampling, repeats)
    requests = [prompt for prompt in prompts for _ in range(repeats)]
    start = time.perf_counter()
    outputs = generate(backend, requests, sampling, instruction) if requests else []
    print(f"sampled {len(outputs)} outputs ({repeats} per prompt) in {time.perf_counter() - start:.1f}s")
    rows = []
    for n, output in enumerate(outputs):
        rows.append(
            {
                "id": ids[n // repeats],
                "repeat": n % repeats,
                "output": output,
                "status": "ok" if output.strip() else "empty_output",
            }
        )
    return pl.DataFrame(rows, schema=REPEAT_GENERATION_SCHEMA)


def rephrase_outputs(
    backend: Backend, generations: pl.DataFrame, k: int, sampling: Sampling, limit: int | None = None
) -> pl.DataFrame:
    """k rephrasings of each of the first `limit` generated answers (the backend carries REPHRASE_SYSTEM_PROMPT).

    An answer that failed (empty output, ...) is not sent to the rephraser: its k rows keep the status
    as `source_<status>` so the analysis counts them.
    """
    generations = generations.head(limit) if limit else generations
    usable = generations.filter(pl.col("status") == "ok")
    rephrased = sample_repeats(backend, usable["id"].to_list(), usable["output"].to_list(), k, sampling)
    failed = [
        {"id": sample_id, "repeat": repeat, "output": "", "status": f"source_{status}"}
        for sample_id, status in generations.filter(pl.col("status") != "ok").select("id", "status").iter_rows()
        for repeat in range(k)
    ]
    return pl.concat([rephrased, pl.DataFrame(failed, schema=REPEAT_GENERATION_SCHEMA)]).sort("id", "repeat")


def consistency_samples(
    backend: Backend, samples: pl.DataFrame, benchmark: Benchmark, r: int, sampling: Sampling
) -> pl.DataFrame:
    """r sampled answers of the evaluated model to each prompt (paper: r = 11, top_p 0.9, temperature 1)."""
    prompts = open_task.generation_prompts(samples, benchmark.prompt)
    return sample_repeats(backend, samples["id"].to_list(), prompts, r, sampling, benchmark.instruction)


def consistency_logliks(backend: Backend, samples: pl.DataFrame, benchmark: Benchmark, r: int) -> pl.DataFrame:
    """The reference log-likelihoods once per repeat, so perplexity's self-consistency is measured, not assumed."""
    requests = open_task.loglik_requests(samples, benchmark.prompt)
    frames = [
        score_logliks(backend, requests, benchmark.instruction).with_columns(repeat=pl.lit(repeat, dtype=pl.Int64))
        for repeat in range(r)
    ]
    return pl.concat(frames)


def repeat_sampling(generation: dict, overrides: dict, benchmark: Benchmark | None = None) -> Sampling:
    """The config's `generation` settings, the benchmark's max_new_tokens and stop strings, then the analysis'
    own sampling keys. The rephraser gets no benchmark: its answer is a rephrasing, not the benchmark's
    answer, and a chatty preamble ("Here is the rephrased text:\n\n...") would end at a blank-line stop."""
    settings = dict(generation) if benchmark is None else benchmark_settings(benchmark, generation)
    settings.update(overrides)
    return Sampling(**settings)


def _batched(batches: list, compute, schema: dict) -> pl.DataFrame:
    frames = [compute(batch) for batch in batches]
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def run_rephrasing(
    generations_path: Path,
    spec: ModelSpec,
    k: int,
    sampling: Sampling,
    output: Path,
    limit: int | None = None,
    *,
    request_batch: int,
    record: Path | None = None,
) -> None:
    """Job: rephrase each answer k times with the rephrasing model (with the paper's system prompt), write the k
    rows per sample. `sampling`: the rephrasings' decoding (:func:`repeat_sampling`).

    In batches of `request_batch` answers (careval.batches), each one call of the cached backend; identical answers
    share a batch, so each copy keeps the seed it has in one whole call.
    """
    generations = pl.read_parquet(generations_path)
    generations = generations.head(limit) if limit else generations
    check_repeat_sampling(sampling, k)
    batches = batches_keeping_duplicates(generations["output"].to_list(), request_batch)
    with job_backend(replace(spec, system_prompt=REPHRASE_SYSTEM_PROMPT), record) as backend:
        frame = _batched(
            batches, lambda batch: rephrase_outputs(backend, generations[batch], k, sampling), REPEAT_GENERATION_SCHEMA
        )
    write_atomic(frame.sort("id", "repeat"), output)


def run_consistency(
    samples_path: Path,
    benchmark: Benchmark,
    spec: ModelSpec,
    r: int,
    sampling: Sampling,
    output: Path,
    loglik_output: Path,
    limit: int | None = None,
    *,
    request_batch: int,
    record: Path | None = None,
) -> None:
    """Job: r sampled answers per prompt and r passes of reference log-likelihoods, from the evaluated model.
    `sampling`: the answers' decoding (:func:`repeat_sampling` with the benchmark).

    Each in batches of `request_batch` samples (careval.batches); samples with identical prompts share a batch, so
    each copy keeps the seed it has in one whole call.
    """
    samples = pl.read_parquet(samples_path)
    samples = samples.head(limit) if limit else samples
    check_repeat_sampling(sampling, r)  # before any model loads
    prompts = open_task.generation_prompts(samples, benchmark.prompt)
    batches = batches_keeping_duplicates(prompts, request_batch)
    with job_backend(spec, record) as backend:
        answers = _batched(
            batches,
            lambda batch: consistency_samples(backend, samples[batch], benchmark, r, sampling),
            REPEAT_GENERATION_SCHEMA,
        )
        logliks = _batched(
            contiguous_batches(samples.height, request_batch),
            lambda batch: consistency_logliks(backend, samples[batch], benchmark, r),
            CONSISTENCY_LOGLIK_SCHEMA,
        )
    write_atomic(answers[input_order(batches, rows_per_item=r)], output)
    # one pass after another, as consistency_logliks writes them for one batch
    write_atomic(logliks.sort("repeat", maintain_order=True), loglik_output)
