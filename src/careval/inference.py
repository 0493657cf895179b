"""Run one model on one benchmark: generations for open tasks, log-likelihoods for every task.

The work goes to the model in batches of `request_batch` samples (careval.batches), each batch one call of the
job's backend (careval.backends.cached: a call asked before is read from the request cache; a killed job, rerun,
reads back what it finished and computes the rest). Every output row records the tokens its request read and
generated (the backend counts them), so the cost table needs no tokenizer."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from careval.backends.base import Backend, Sampling
from careval.backends.cached import job_backend
from careval.batches import batches_keeping_duplicates, contiguous_batches, input_order, write_atomic
from careval.datasets import lm_eval_tasks
from careval.datasets.benchmark import Benchmark
from careval.models.spec import ModelSpec
from careval.schemas import GENERATION_SCHEMA, LOGLIK_REQUEST_SCHEMA, LOGLIK_SCHEMA
from careval.tasks import mcqa, open as open_task
from careval.tasks.prompts import without_instruction


def benchmark_settings(benchmark: Benchmark, generation: dict) -> dict:
    """The config's `generation` settings with the benchmark's own max_new_tokens and stop strings on top
    (its config entry's, else its catalogue entry's: for the authors' open tasks, their `until`; for an lm-eval
    task lm-eval's max_gen_toks and `until`, and its temperature: greedy unless the task samples)."""
    settings = dict(generation)
    lm_eval = benchmark.lm_eval.generation if benchmark.lm_eval is not None else None
    if lm_eval is not None:
        settings["temperature"] = float(lm_eval.get("temperature", 0.0)) if lm_eval.get("do_sample") else 0.0
        if "top_p" in lm_eval:
            settings["top_p"] = float(lm_eval["top_p"])
    if benchmark.max_new_tokens:
        settings["max_new_tokens"] = benchmark.max_new_tokens
    if benchmark.stop is not None:
        settings["stop"] = benchmark.stop
    return settings


def sampling_for(benchmark: Benchmark, generation: dict) -> Sampling:
    return Sampling(**benchmark_settings(benchmark, generation))


def loglik_requests(samples: pl.DataFrame, benchmark: Benchmark) -> pl.DataFrame:
    """Options (MCQA, prescription, loglik-mode classification) or the reference (open, for perplexity);
    none for tasks scored on the generation alone (relation extraction, generate-mode classification); an lm-eval
    task's own requests, verbatim, where it is scored by log-likelihood (a generating one: as an open task)."""
    if benchmark.lm_eval is not None and not benchmark.generates:
        return lm_eval_tasks.loglik_requests(samples, greedy=lm_eval_tasks.needs_greedy(benchmark.lm_eval))
    if benchmark.task == "open":
        return open_task.loglik_requests(samples, benchmark.prompt)
    if benchmark.computes_logliks:  # a choice task scored by log-likelihood
        style = benchmark.mcqa_style if benchmark.task == "mcqa" else "cloze"  # class names are scored as text
        return mcqa.loglik_requests(samples, benchmark.prompt, style)
    return pl.DataFrame(schema=LOGLIK_REQUEST_SCHEMA)


def score_logliks(backend: Backend, requests: pl.DataFrame, instruction: str = "") -> pl.DataFrame:
    """Conditional requests go to `loglikelihood`, kind greedy (an lm-eval task's is_greedy) to `greedy_flags`, each as
    the backend sends it (Backend.request_pair: its system prompt and chat template are the backend's), its context
    less `instruction` (the benchmark's, Benchmark.instruction, which every context it built starts with, given to the
    backend apart as to `generate`, for a chat template's system turn); whole-reference ones to
    `loglikelihood_rolling`. The rows keep each request as the task built it, whatever the model's wrapping."""
    start = time.perf_counter()
    values = [float("nan")] * requests.height
    tokens: list[int | None] = [None] * requests.height
    cut: list[int | None] = [None] * requests.height
    kinds = requests["kind"].to_list()
    conditional = [i for i, kind in enumerate(kinds) if kind not in ("reference", "greedy")]
    rolling = [i for i, kind in enumerate(kinds) if kind == "reference"]
    greedy = [i for i, kind in enumerate(kinds) if kind == "greedy"]

    def pairs_of(rows: list[int]) -> list[tuple[str, str]]:
        contexts, continuations = requests["context"], requests["continuation"]
        return [
            backend.request_pair(without_instruction(contexts[i], instruction), continuations[i], instruction)
            for i in rows
        ]

    if greedy:
        for i, value in zip(greedy, backend.greedy_flags(pairs_of(greedy))):
            values[i] = value
    if conditional:
        for i, value in zip(conditional, backend.loglikelihood(pairs_of(conditional))):
            values[i] = value
        _record_tokens(tokens, cut, conditional, backend)
    if rolling:
        for i, value in zip(rolling, backend.loglikelihood_rolling([requests["continuation"][i] for i in rolling])):
            values[i] = value
        _record_tokens(tokens, cut, rolling, backend)
    print(f"scored {requests.height} log-likelihood requests in {time.perf_counter() - start:.1f}s")
    return requests.with_columns(
        pl.Series("loglik", values, dtype=pl.Float64),
        pl.Series("tokens", tokens, dtype=pl.Int64),
        pl.Series("cut_tokens", cut, dtype=pl.Int64),
    )


def _record_tokens(tokens: list[int | None], cut: list[int | None], rows: list[int], backend: Backend) -> None:
    """The tokens each request of the last call read, and those cut from its context, where the backend counts them."""
    if len(backend.last_usage) == len(rows):
        for i, usage in zip(rows, backend.last_usage):
            tokens[i], cut[i] = usage[0], usage[2] if len(usage) > 2 else None


def batched_logliks(
    backend: Backend, requests: pl.DataFrame, request_batch: int, label: str, instruction: str = ""
) -> pl.DataFrame:
    """score_logliks over batches of `request_batch` samples (a sample's requests stay together)."""
    ids = requests["id"].unique(maintain_order=True).to_list()
    batches = [[ids[i] for i in batch] for batch in contiguous_batches(len(ids), request_batch)]
    frames = []
    for number, batch in enumerate(batches):
        print(f"{label}: batch {number + 1}/{len(batches)}", flush=True)
        frames.append(score_logliks(backend, requests.filter(pl.col("id").is_in(batch)), instruction))
    return pl.concat(frames) if frames else pl.DataFrame(schema=LOGLIK_SCHEMA)


def generate(backend: Backend, prompts: list[str], sampling: Sampling, instruction: str) -> list[str]:
    """The backend's completions of a benchmark's `prompts`, its `instruction` apart (as :func:`score_logliks` gives
    it)."""
    if not instruction:
        return backend.generate(prompts, sampling)
    return backend.generate([without_instruction(p, instruction) for p in prompts], sampling, instruction)


def batched_generations(
    backend: Backend, samples: pl.DataFrame, benchmark: Benchmark, sampling: Sampling, request_batch: int
) -> pl.DataFrame:
    """One generation per sample, in batches of prompts (identical prompts together, for their seeds). The backend gets
    each prompt without the benchmark's instruction, and the instruction apart (for a chat template's system turn, as
    lm-eval's --apply_chat_template sends its task's description); the rows keep the prompts as the task wrote them."""
    prompts = open_task.generation_prompts(samples, benchmark.prompt)
    batches = batches_keeping_duplicates(prompts, request_batch)
    frames = []
    for number, batch in enumerate(batches):
        start = time.perf_counter()
        outputs = generate(backend, [prompts[i] for i in batch], sampling, benchmark.instruction)
        print(
            f"{benchmark.name} generations: batch {number + 1}/{len(batches)}, {len(outputs)} outputs "
            f"in {time.perf_counter() - start:.1f}s",
            flush=True,
        )
        frames.append(
            open_task.generation_rows(
                samples[batch], [prompts[i] for i in batch], outputs, backend.last_usage, backend.last_status
            )
        )
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=GENERATION_SCHEMA)
    return frame[input_order(batches)]


def run_inference(
    samples_path: Path,
    benchmark: Benchmark,
    spec: ModelSpec,
    sampling: Sampling | None,
    loglik_path: Path,
    generations_path: Path | None = None,
    *,
    request_batch: int,
    record: Path | None = None,
) -> None:
    """The model's log-likelihoods and, when asked, its generations (decoded with `sampling`, the benchmark's
    effective decoding: :func:`sampling_for`), in batches of `request_batch` samples (see the module docstring);
    `record`: where the job's request counts go (careval.backends.cached.CachedBackend.finish)."""
    if generations_path is not None and sampling is None:
        raise ValueError(f"{benchmark.name}: generations asked for without a decoding (sampling)")
    samples = pl.read_parquet(samples_path)
    with job_backend(spec, record) as backend:
        requests = loglik_requests(samples, benchmark)
        if benchmark.generates and not backend.capabilities.prompt_logprobs:
            # a chat API on a generating benchmark: the plan let it run only where no family reads these (perplexity)
            requests = requests.clear()
        outputs = {
            loglik_path: batched_logliks(
                backend,
                requests,
                request_batch,
                f"{benchmark.name} log-likelihoods",
                benchmark.instruction,
            )
        }
        if generations_path is not None and sampling is not None:
            outputs[generations_path] = batched_generations(backend, samples, benchmark, sampling, request_batch)
    for path, frame in outputs.items():
        write_atomic(frame, path)
