"""The jobs of one benchmark, or of one model on one benchmark: normalising it, running the model, judging and
scoring what it wrote.

Each function is the body of a rule's job (its `body` param: careval.jobs.run), given the job's `snakemake` object;
it imports what it needs itself, so a job imports only its own body's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from careval.canonical import job_of
from careval.joblog import requests_record


def normalise_benchmark(snakemake: Any) -> None:
    """Read one benchmark from its source and write its canonical samples."""
    from careval.datasets import build_benchmark
    from careval.results_check import job_digest

    job = job_of(snakemake)
    build_benchmark(job.entry, Path(snakemake.output.samples), limit=job.limit, made_by=job_digest(job))


def infer(snakemake: Any) -> None:
    """Run one model on one benchmark: log-likelihoods, and generations when the rule asks for them."""
    from careval.inference import run_inference
    from careval.models.spec import model_for_job

    job = job_of(snakemake)
    run_inference(
        Path(snakemake.input.samples),
        job.entry,
        model_for_job(job.model, snakemake),
        job.sampling,
        loglik_path=Path(snakemake.output.loglik),
        generations_path=Path(snakemake.output.generations) if "generations" in snakemake.output.keys() else None,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
    )


def relaxed_perplexity(snakemake: Any) -> None:
    """Relaxed Perplexity of one model on one open-ended benchmark."""
    from careval.jobs.relaxed_perplexity import run_relaxed_perplexity
    from careval.models.spec import model_for_job

    job = job_of(snakemake)
    run_relaxed_perplexity(
        Path(snakemake.input.samples),
        Path(snakemake.output[0]),
        job.entry.prompt,
        model_for_job(job.model, snakemake),
        job.options,
        targets_path=Path(snakemake.output.targets),
        record=requests_record(snakemake.log[0]),
        instruction=job.entry.instruction,
    )


def llm_family(snakemake: Any) -> None:
    """An LLM-run metric family (its registry entry's runner: a plugin's) of one model on one benchmark."""
    import polars as pl

    from careval.backends.cached import job_backend
    from careval.metrics.registry import FAMILIES
    from careval.models.spec import model_for_job
    from careval.schemas import SCORE_SCHEMA

    job = job_of(snakemake)
    samples = pl.read_parquet(snakemake.input.samples)
    with job_backend(model_for_job(job.model, snakemake), requests_record(snakemake.log[0])) as backend:
        scores = FAMILIES[job.family].run(samples, backend, job.entry, job.options)
    if not isinstance(scores, pl.DataFrame) or dict(scores.schema) != SCORE_SCHEMA:
        got = dict(scores.schema) if isinstance(scores, pl.DataFrame) else type(scores).__name__
        raise TypeError(f"metric family '{job.family}': its runner returned {got}, not the columns {SCORE_SCHEMA}")
    Path(snakemake.output[0]).parent.mkdir(parents=True, exist_ok=True)
    scores.write_parquet(snakemake.output[0])


def sample_consistency(snakemake: Any) -> None:
    """Sample r answers per prompt from one model on one benchmark, with r passes of reference log-likelihoods."""
    from careval.jobs.repeats import run_consistency
    from careval.models.spec import model_for_job

    job = job_of(snakemake)
    run_consistency(
        Path(snakemake.input.samples),
        job.entry,
        model_for_job(job.model, snakemake),
        job.r,
        job.sampling,
        Path(snakemake.output.samples),
        Path(snakemake.output.loglik),
        limit=job.limit,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
    )


def rephrase(snakemake: Any) -> None:
    """Rephrase one model's answers on one benchmark k times with the configured rephrasing LLM."""
    from careval.jobs.repeats import run_rephrasing

    job = job_of(snakemake)
    run_rephrasing(
        Path(snakemake.input.generations),
        job.rephraser.for_job(snakemake.threads, snakemake.resources.gpu),
        job.k,
        job.sampling,
        Path(snakemake.output[0]),
        limit=job.limit,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
    )


def judge(snakemake: Any) -> None:
    """Grade one model's generations on one benchmark with the Prometheus judge, or (an input `repeats`: rule
    judge_repeats) their rephrasings or sampled answers."""
    from careval.jobs.judge import run_judge

    job = job_of(snakemake)
    run_judge(
        Path(snakemake.input.samples),
        Path(snakemake.input.generations),
        Path(snakemake.output[0]),
        job.judge.for_job(snakemake.threads, snakemake.resources.gpu),
        job.options,
        request_batch=job.request_batch,
        record=requests_record(snakemake.log[0]),
        repeats_path=Path(snakemake.input.repeats) if "repeats" in snakemake.input.keys() else None,
    )


def jury(snakemake: Any) -> None:
    """The jury's grades of one model on one benchmark (or of its repeats) from its judges' files."""
    from careval.jobs.jury import run_jury

    run_jury([Path(path) for path in snakemake.input], Path(snakemake.output[0]), job_of(snakemake))


def score(snakemake: Any) -> None:
    """Score one model x benchmark with every metric family of its task."""
    from careval.scoring import score_benchmark

    job = job_of(snakemake)
    score_benchmark(
        Path(snakemake.input.samples),
        # a task's job names each family's file; a one-family job (rule score_family) has one
        {family: Path(snakemake.output.get(family, snakemake.output[0])) for family in job.family_names},
        generations_path=Path(snakemake.input.generations) if "generations" in snakemake.input.keys() else None,
        loglik_path=Path(snakemake.input.loglik),
        options=job.options(),
        min_chars=job.min_chars,
    )


def score_repeats(snakemake: Any) -> None:
    """Score a file of repeated outputs (rephrasings or samples) with every text metric, plus perplexity per repeat when given."""
    from careval.analysis.statistics.spread import score_repeat_file

    job = job_of(snakemake)
    score_repeat_file(
        Path(snakemake.input.samples),
        Path(snakemake.input.repeats),
        job.family_names,
        job.options(),
        Path(snakemake.output[0]),
        loglik_path=Path(snakemake.input.loglik) if "loglik" in snakemake.input.keys() else None,
        min_chars=job.min_chars,
    )
