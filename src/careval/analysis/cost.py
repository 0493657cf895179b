"""Cost per result: per model x benchmark, the wall seconds and GPU-seconds of every job that produced it (Snakemake's
`benchmark:` files) and the tokens it read and generated (its inference outputs, counted with the model's tokenizer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path

import numpy as np
import polars as pl

from careval.canonical import EXECUTION, JobSpec, job_spec
from careval.schemas import COST_SCHEMA


@job_spec
class CostJob(JobSpec):
    """The cost job: each job kind's (the folder under results/benchmarks) GPUs per model, the judge's and the
    rephraser's where they run. gpus: kind -> model -> GPUs of that job (its model's `gpus`); model_paths: each
    evaluated model's folder, for its tokenizer (where a model lies changes no count)."""

    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    gpus: dict[str, dict[str, int]]
    model_paths: dict[str, str] = field(metadata=EXECUTION)


class CostError(ValueError):
    """A benchmark file that does not read as Snakemake's; one line naming it."""


def job_times(benchmarks_dir: Path, models: tuple[str, ...], benchmarks: tuple[str, ...]) -> pl.DataFrame:
    """Every job time under `benchmarks_dir` whose path ends in <model>/<benchmark>.tsv: model, benchmark, job (the
    path between: infer_open, judge_repeats/consistency, ...), wall_seconds (Snakemake's `s`, summed over the
    file's rows: one per repeat of `benchmark: repeat(...)`)."""
    rows = []
    for path in sorted(Path(benchmarks_dir).rglob("*.tsv")):
        model, benchmark = path.parent.name, path.stem
        if model not in models or benchmark not in benchmarks:
            continue
        try:
            seconds = pl.read_csv(path, separator="\t")["s"].cast(pl.Float64).sum()
        except (pl.exceptions.PolarsError, KeyError) as error:
            raise CostError(f"{path}: not a Snakemake benchmark file with an 's' column ({error})") from None
        job = path.parent.parent.relative_to(benchmarks_dir).as_posix()
        rows.append({"model": model, "benchmark": benchmark, "job": job, "wall_seconds": float(seconds)})
    return pl.DataFrame(
        rows, schema={"model": pl.String, "benchmark": pl.String, "job": pl.String, "wall_seconds": pl.Float64}
    )


def token_counts(count: Callable[[list[str]], int], generations: pl.DataFrame | None, logliks: pl.DataFrame | None):
    """(prompt tokens, generated tokens) of one model x benchmark's inference: every prompt sent for generation and
    every log-likelihood request's context and continuation are read; every output is generated. `count`: the total
    tokens of a list of texts under the model's tokenizer."""
    prompt = generated = 0
    if generations is not None:
        prompt += count(generations["prompt"].fill_null("").to_list())
        generated += count(generations["output"].fill_null("").to_list())
    if logliks is not None:
        prompt += count((logliks["context"].fill_null("") + logliks["continuation"].fill_null("")).to_list())
    return prompt, generated


def tokenizer_counter(path: str) -> Callable[[list[str]], int] | None:
    """The model's tokenizer as a counter (no special tokens), or None where none loads (a served model)."""
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError):
        return None

    def count(texts: list[str]) -> int:
        return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]) if texts else 0

    return count


def cost_table(
    times: pl.DataFrame,
    job: CostJob,
    tokens: dict[tuple[str, str], tuple[int, int]],
) -> pl.DataFrame:
    """COST_SCHEMA: per model x benchmark, its jobs' wall seconds, GPU-seconds (each job's GPUs x its wall time) and
    tokens (`tokens`: (model, benchmark) -> (prompt, generated); absent: null), and the jobs counted."""
    gpus = np.array(
        [
            job.gpus.get(kind.split("/")[0], {}).get(model, 0)
            for kind, model in times.select("job", "model").iter_rows()
        ],
        float,
    )
    per_job = times.with_columns(gpu_seconds=pl.Series(gpus) * pl.col("wall_seconds") if times.height else pl.lit(0.0))
    summed = per_job.group_by("model", "benchmark").agg(
        pl.col("wall_seconds").sum(),
        pl.col("gpu_seconds").sum(),
        pl.col("job").sort().str.join(",").alias("jobs"),
    )
    keys = pl.DataFrame(
        [(m, b) for m in job.models for b in job.benchmarks], schema=["model", "benchmark"], orient="row"
    )
    table = keys.join(summed, on=["model", "benchmark"], how="left")
    prompt = [tokens.get((m, b), (None, None))[0] for m, b in table.select("model", "benchmark").iter_rows()]
    generated = [tokens.get((m, b), (None, None))[1] for m, b in table.select("model", "benchmark").iter_rows()]
    table = table.with_columns(
        prompt_tokens=pl.Series(prompt, dtype=pl.Int64),
        generated_tokens=pl.Series(generated, dtype=pl.Int64),
    )
    return table.with_columns(pl.col("jobs").fill_null("")).select(list(COST_SCHEMA)).cast(COST_SCHEMA)


def write_cost(
    benchmarks_dir: Path,
    inference: dict[tuple[str, str], tuple[Path | None, Path | None]],
    job: CostJob,
    output: Path,
) -> pl.DataFrame:
    """inference: (model, benchmark) -> (generations parquet or None, log-likelihood parquet or None)."""
    counters = {model: tokenizer_counter(path) for model, path in job.model_paths.items()}
    tokens = {}
    for (model, benchmark), (generations, logliks) in inference.items():
        counter = counters.get(model)
        if counter is not None:
            tokens[(model, benchmark)] = token_counts(
                counter,
                pl.read_parquet(generations) if generations else None,
                pl.read_parquet(logliks) if logliks else None,
            )
    table = cost_table(job_times(benchmarks_dir, job.models, job.benchmarks), job, tokens)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(output)
    return table


def model_totals(cost: pl.DataFrame) -> pl.DataFrame:
    """Per model: every result's cost summed (the cost page's x axis)."""
    return cost.group_by("model").agg(
        pl.col("wall_seconds").sum(),
        pl.col("gpu_seconds").sum(),
        (pl.col("prompt_tokens").fill_null(0) + pl.col("generated_tokens").fill_null(0)).sum().alias("tokens"),
    )


def efficiency_frontier(cost: np.ndarray, quality: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Which models no other model beats on both: at most the cost and at least the quality, one strictly."""
    q = quality if higher_is_better else -quality
    ok = np.isfinite(cost) & np.isfinite(q)
    frontier = np.zeros(len(cost), bool)
    for i in np.flatnonzero(ok):
        dominated = ok & (cost <= cost[i]) & (q >= q[i]) & ((cost < cost[i]) | (q > q[i]))
        frontier[i] = not dominated.any()
    return frontier
