"""The Relaxed Perplexity of a few example questions for one model (paper Table 6): each a sample of a benchmark,
scored against its own Must_have / Nice_to_have statements or against statements the config gives it.

The example is the benchmark's normalised sample (found by id or by its question), asked with that benchmark's
prompt, and scored by careval.jobs.relaxed_perplexity as that job scores a sample: the same value, for a sample and
statements the run scores too, as the run's own per-target file holds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl

from careval.backends import Backend
from careval.backends.cached import job_backend
from careval.datasets.normalise import read_benchmark
from careval.jobs.relaxed_perplexity import relaxed_perplexity_targets
from careval.metrics.relaxed_perplexity import NICE_TO_HAVE
from careval.models.spec import ModelSpec
from careval.specs import Example, ExamplesJob, NormaliseJob

MUST_HAVE = "must_have"


class ExampleError(ValueError):
    """An example names no sample of its benchmark (one line naming the example)."""


def example_sample(samples: pl.DataFrame, example: Example, where: str) -> pl.DataFrame:
    """The example's sample (by id, else by its question, whitespace at the ends aside), with the config's
    statements in its meta where given."""
    if example.id is not None:
        found = samples.filter(pl.col("id") == example.id)
        what = f"id '{example.id}'"
    else:
        # whitespace runs as one space: a question written over several lines of YAML is the sample's
        wanted = " ".join((example.question or "").split())
        found = samples.filter(pl.col("question").str.replace_all(r"\s+", " ").str.strip_chars() == wanted)
        what = f"the question '{wanted[:60]}'"
    if found.height != 1:
        raise ExampleError(
            f"{where}: {found.height or 'no'} samples of {example.benchmark} have {what} (ids: {samples['id'].head(3).to_list()}, ...)"
        )
    row = found.row(0, named=True)
    meta = json.loads(row["meta"]) if row.get("meta") else {}
    for name, statements in ((MUST_HAVE, example.must_have), (NICE_TO_HAVE, example.nice_to_have)):
        if statements is not None:
            meta[name] = list(statements)
    if example.must_have is None and example.nice_to_have is not None and MUST_HAVE not in meta:
        raise ExampleError(f"{where}: nice_to_have is given, must_have is not (and the sample has none)")
    return found.with_columns(meta=pl.lit(json.dumps(meta)))


def benchmark_samples(dataset: NormaliseJob) -> pl.DataFrame:
    """Every sample of a benchmark, read and normalised as its normalisation job reads it (without a limit)."""
    return read_benchmark(dataset.entry).samples


def score_examples(backend: Backend, job: ExamplesJob, samples: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Per example and target: RELAXED_PERPLEXITY_TARGET_SCHEMA with the example's position, benchmark and question."""
    frames = []
    instructions = {dataset.benchmark: dataset.entry.instruction for dataset in job.datasets}
    for position, example in enumerate(job.examples):
        sample = example_sample(samples[example.benchmark], example, f"{job.key}[{position}]")
        prompt, instruction = job.prompts[example.benchmark], instructions[example.benchmark]
        targets = relaxed_perplexity_targets(backend, sample, prompt, job.options, instruction)
        frames.append(
            targets.with_columns(
                example=pl.lit(position), benchmark=pl.lit(example.benchmark), question=pl.lit(sample["question"][0])
            )
        )
    return pl.concat(frames)


def run_examples(job: ExamplesJob, spec: ModelSpec, output: Path) -> None:
    """Job: find every example first (a missing one is one line, before the model loads), then score them."""
    samples = {dataset.benchmark: benchmark_samples(dataset) for dataset in job.datasets}
    for position, example in enumerate(job.examples):
        example_sample(samples[example.benchmark], example, f"{job.key}[{position}]")
    start = time.perf_counter()
    with job_backend(spec) as backend:
        rows = score_examples(backend, job, samples)
    print(f"relaxed perplexity of {spec.name} on {len(job.examples)} examples in {time.perf_counter() - start:.1f}s")
    output.parent.mkdir(parents=True, exist_ok=True)
    rows.write_parquet(output)
