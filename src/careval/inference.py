"""Run one model on one benchmark: generations for open tasks, log-likelihoods for every task."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import polars as pl

from careval.backends import load_backend
from careval.backends.base import Backend, Sampling
from careval.checkpoint import (
    Checkpoint,
    batches_keeping_duplicates,
    contiguous_batches,
    digest,
    fingerprint,
    input_order,
    write_atomic,
)
from careval.datasets import lm_eval_tasks
from careval.datasets.benchmark import Benchmark
from careval.models.spec import ModelSpec
from careval.schemas import GENERATION_SCHEMA, LOGLIK_SCHEMA
from careval.tasks import mcqa, open as open_task
from careval.tasks.mcqa import TARGET_DELIMITER


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
    return pl.DataFrame(schema={name: dtype for name, dtype in LOGLIK_SCHEMA.items() if name != "loglik"})


def model_pair(backend: Backend, context: str, continuation: str, chat_template: bool) -> tuple[str, str]:
    """A conditional request as this model is sent it. The context is a prompt, so it becomes what a generation
    prompt becomes (the model's system prompt, its chat template: lm-eval's --apply_chat_template wraps a
    multiple-choice context too); under a chat template the continuation loses the target delimiter, as lm-eval's
    construct_requests drops it (the assistant's turn starts the answer). A served model's template is the server's:
    its backend's `format` gives the context as it is."""
    context = backend.format(context)
    if chat_template:
        continuation = continuation.removeprefix(TARGET_DELIMITER)
    return context, continuation


def score_logliks(backend: Backend, requests: pl.DataFrame, chat_template: bool = False) -> pl.DataFrame:
    """Conditional requests go to `loglikelihood` (as :func:`model_pair` sends them), whole-reference ones to
    `loglikelihood_rolling`, kind greedy (an lm-eval task's is_greedy) to `greedy_flags`. The rows keep
    each request as the task built it, whatever the model's wrapping."""
    start = time.perf_counter()
    values = [float("nan")] * requests.height
    kinds = requests["kind"].to_list()
    conditional = [i for i, kind in enumerate(kinds) if kind not in ("reference", "greedy")]
    rolling = [i for i, kind in enumerate(kinds) if kind == "reference"]
    greedy = [i for i, kind in enumerate(kinds) if kind == "greedy"]
    if greedy:
        pairs = [
            model_pair(backend, requests["context"][i], requests["continuation"][i], chat_template) for i in greedy
        ]
        for i, value in zip(greedy, backend.greedy_flags(pairs)):
            values[i] = value
    if conditional:
        pairs = [
            model_pair(backend, requests["context"][i], requests["continuation"][i], chat_template) for i in conditional
        ]
        for i, value in zip(conditional, backend.loglikelihood(pairs)):
            values[i] = value
    if rolling:
        for i, value in zip(rolling, backend.loglikelihood_rolling([requests["continuation"][i] for i in rolling])):
            values[i] = value
    print(f"scored {requests.height} log-likelihood requests in {time.perf_counter() - start:.1f}s")
    return requests.with_columns(pl.Series("loglik", values, dtype=pl.Float64))


class OnDemandBackend:
    """The job's backend, loaded at its first use: a job resumed with every batch done loads no model."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._backend: Backend | None = None

    def __call__(self) -> Backend:
        if self._backend is None:
            start = time.perf_counter()
            self._backend = load_backend(self.spec)
            # one line per load: the logs count how often a model was loaded (README, cluster section)
            print(
                f"loaded model {self.spec.name} ({self.spec.backend}, gpus={self.spec.gpus}, dtype={self.spec.dtype}) "
                f"in {time.perf_counter() - start:.1f}s"
            )
        return self._backend


def model_facts(spec: ModelSpec) -> dict:
    """What of a model spec decides its outputs (a checkpoint's fingerprint): its identity (careval.canonical),
    with the dtype the job runs in (ModelSpec.for_job); not its CPU threads, which a rerun after a crash may
    well change (`--cores`) without changing a number."""
    return spec.identity()


def checkpointed_logliks(
    backend: OnDemandBackend, requests: pl.DataFrame, output: Path, batch_size: int, label: str
) -> tuple[pl.DataFrame, Checkpoint]:
    """score_logliks over batches of `batch_size` samples (a sample's requests stay together), checkpointed beside `output`."""
    ids = requests["id"].unique(maintain_order=True).to_list()
    batches = [[ids[i] for i in batch] for batch in contiguous_batches(len(ids), batch_size)]
    key = fingerprint(
        output="loglik",
        model=model_facts(backend.spec),
        requests=digest(requests.rows()),
        batches=[len(batch) for batch in batches],
    )
    checkpoint = Checkpoint(output, key, label)
    frame = checkpoint.run(
        batches,
        lambda batch: score_logliks(backend(), requests.filter(pl.col("id").is_in(batch)), backend.spec.chat_template),
        LOGLIK_SCHEMA,
    )
    return frame, checkpoint


def checkpointed_generations(
    backend: OnDemandBackend,
    samples: pl.DataFrame,
    benchmark: Benchmark,
    sampling: Sampling,
    output: Path,
    batch_size: int,
) -> tuple[pl.DataFrame, Checkpoint]:
    """One generation per sample, in batches of prompts (identical prompts together, for their seeds), checkpointed."""
    prompts = open_task.generation_prompts(samples, benchmark.prompt)
    batches = batches_keeping_duplicates(prompts, batch_size)
    key = fingerprint(
        output="generations",
        model=model_facts(backend.spec),
        sampling=asdict(sampling),
        ids=digest(samples["id"]),
        prompts=digest(prompts),
        batches=batches,
    )

    def compute(batch):
        start = time.perf_counter()
        outputs = backend().generate([prompts[i] for i in batch], sampling)
        print(f"generated {len(outputs)} outputs on {benchmark.name} in {time.perf_counter() - start:.1f}s")
        return open_task.generation_rows(samples[batch], [prompts[i] for i in batch], outputs)

    checkpoint = Checkpoint(output, key, f"{benchmark.name} generations")
    frame = checkpoint.run(batches, compute, GENERATION_SCHEMA)
    return frame[input_order(batches)], checkpoint


def run_inference(
    samples_path: Path,
    benchmark: Benchmark,
    spec: ModelSpec,
    sampling: Sampling | None,
    loglik_path: Path,
    generations_path: Path | None = None,
    *,
    checkpoint_every: int,
) -> None:
    """Load the model once; write its log-likelihoods and, when asked, its generations (decoded with `sampling`,
    the benchmark's effective decoding: :func:`sampling_for`).

    Both are computed in batches of `checkpoint_every` samples, each kept in a checkpoint beside its
    output (careval.checkpoint): a killed job, rerun, resumes after its last finished batch and
    writes the same bytes as an uninterrupted run.
    """
    if generations_path is not None and sampling is None:
        raise ValueError(f"{benchmark.name}: generations asked for without a decoding (sampling)")
    samples = pl.read_parquet(samples_path)
    backend = OnDemandBackend(spec)
    logliks, checkpoint = checkpointed_logliks(
        backend, loglik_requests(samples, benchmark), loglik_path, checkpoint_every, f"{benchmark.name} log-likelihoods"
    )
    outputs, checkpoints = {loglik_path: logliks}, [checkpoint]
    if generations_path is not None and sampling is not None:
        frame, checkpoint = checkpointed_generations(
            backend, samples, benchmark, sampling, generations_path, checkpoint_every
        )
        outputs[generations_path] = frame
        checkpoints.append(checkpoint)
    for path, frame in outputs.items():
        write_atomic(frame, path)
    for checkpoint in checkpoints:  # only now: a job killed between two outputs keeps every batch
        checkpoint.discard()
