"""Cost per result: per model x benchmark, the wall seconds and GPU-seconds of every job that produced it (Snakemake's
`benchmark:` files), and the requests its LLM jobs read from the request cache or computed, with the tokens of those
they computed (each job's request counts beside its log: careval.backends.cached): what this run spent. Beside it,
what the results needed, read or computed: each cache entry keeps the tokens, seconds and GPUs of the call that computed
it, so a result remade from the cache costs what it cost, and the models' costs stay comparable (NEEDED_COLUMNS). A
served model's (an `endpoint:` entry with a `price`) computed tokens are money too: the `cost` column.
"""

from __future__ import annotations

import json
from dataclasses import field
from pathlib import Path

import numpy as np
import polars as pl

from careval.canonical import EXECUTION, JobSpec, job_spec
from careval.request_cache import RequestCache
from careval.schemas import CACHE_SCHEMA, COST_SCHEMA

REQUEST_COLUMNS = ("cached_requests", "computed_requests", "prompt_tokens", "generated_tokens")
# a job's record key -> the cost table's column (COST_SCHEMA), where the record has it (older records do not: null)
NEEDED_COLUMNS = {
    "needed_prompt_tokens": "needed_prompt_tokens",
    "needed_generated_tokens": "needed_generated_tokens",
    "needed_seconds": "needed_seconds",
    "needed_gpu_seconds": "needed_gpu_seconds",
    "needed_uncosted": "uncosted_requests",
    "cut_requests": "cut_requests",
}


@job_spec
class CostJob(JobSpec):
    """The cost job: each job kind's (the folder under results/benchmarks) GPUs per model, the judge's and the
    rephraser's where they run. gpus: kind -> model -> GPUs of that job (its model's `gpus`); cache_dir: the request
    cache, whose size the cost page shows (None: no cache)."""

    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    gpus: dict[str, dict[str, int]]
    cache_dir: str | None = field(default=None, metadata=EXECUTION)
    # kind -> model -> [input, output] price per million tokens of the served model that job ran ({}: none has one)
    prices: dict[str, dict[str, list[float]]] = field(default_factory=dict)


def cost_quality_warnings(config: dict, mcqa_average, benchmarks: dict) -> list[str]:
    """The cost page's quality that the run cannot show, at config time (the page says so too): the MCQA average
    (analysis.cost.benchmark's default) where analysis.mcqa_average has none of the run's benchmarks."""
    if config["analysis"]["cost"]["benchmark"] != "mcqa_weighted_average" or mcqa_average is None or mcqa_average:
        return []
    mcqa = [name for name, entry in benchmarks.items() if entry.task == "mcqa"]
    listed = config["analysis"]["mcqa_average"]
    shown = ", ".join(listed[:3]) + (f", ... ({len(listed)})" if len(listed) > 3 else "") or "none"
    return [
        f"analysis.cost.benchmark: mcqa_weighted_average is not computed: analysis.mcqa_average ({shown}) has none "
        f"of this run's benchmarks (its MCQA benchmarks: {', '.join(mcqa) or 'none'}); the cost page has no quality "
        "to show: list them in analysis.mcqa_average, or set analysis.cost.benchmark and metric"
    ]


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


def job_requests(logs_dir: Path, models: tuple[str, ...], benchmarks: tuple[str, ...]) -> pl.DataFrame:
    """Every LLM job's request counts under `logs_dir` (<kind...>/<model>/<benchmark>.requests.json, beside its log):
    model, benchmark, job, and REQUEST_COLUMNS (the tokens of the computed requests only)."""
    rows = []
    for path in sorted(Path(logs_dir).rglob("*.requests.json")):
        model, benchmark = path.parent.name, path.name[: -len(".requests.json")]
        if model not in models or benchmark not in benchmarks:
            continue
        try:
            counts = json.loads(path.read_text())
            values = [int(counts[key]) for key in ("cached", "computed", "prompt_tokens", "generated_tokens")]
            needed = {column: counts.get(key) for key, column in NEEDED_COLUMNS.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CostError(f"{path}: not a job's request counts ({error})") from None
        job = path.parent.parent.relative_to(logs_dir).as_posix()
        rows.append(
            {"model": model, "benchmark": benchmark, "job": job, **dict(zip(REQUEST_COLUMNS, values)), **needed}
        )
    schema = {
        "model": pl.String,
        "benchmark": pl.String,
        "job": pl.String,
        **dict.fromkeys(REQUEST_COLUMNS, pl.Int64),
        **{column: COST_SCHEMA[column] for column in NEEDED_COLUMNS.values()},
    }
    return pl.DataFrame(rows, schema=schema)


def cost_table(times: pl.DataFrame, job: CostJob, requests: pl.DataFrame) -> pl.DataFrame:
    """COST_SCHEMA: per model x benchmark, its jobs' wall seconds, GPU-seconds (each job's GPUs x its wall time), the
    requests they read from the cache and computed, the tokens of those computed (`requests`: job_requests; a
    result no LLM job made: null), and the jobs counted."""
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
    prices = [
        job.prices.get(kind.split("/")[0], {}).get(model) for kind, model in requests.select("job", "model").iter_rows()
    ]
    money = [
        None if price is None else (prompt * price[0] + generated * price[1]) / 1e6
        for price, prompt, generated in zip(prices, requests["prompt_tokens"], requests["generated_tokens"])
    ]
    requests = requests.with_columns(pl.Series("cost", money, dtype=pl.Float64))
    needed = list(NEEDED_COLUMNS.values())
    spent = requests.group_by("model", "benchmark").agg(
        pl.col(list(REQUEST_COLUMNS)).sum(),
        # a sum over jobs some of whose records predate these counts is not known: null
        *(pl.when(pl.col(c).null_count() == 0).then(pl.col(c).sum()).alias(c) for c in needed),
        # summed where a job had a price (a sum of nulls stays null: no served model's money in that result)
        pl.when(pl.col("cost").is_not_null().any()).then(pl.col("cost").sum()).alias("cost"),
    )
    table = keys.join(summed, on=["model", "benchmark"], how="left").join(spent, on=["model", "benchmark"], how="left")
    return table.with_columns(pl.col("jobs").fill_null("")).select(list(COST_SCHEMA)).cast(COST_SCHEMA)


def write_cost(
    benchmarks_dir: Path, logs_dir: Path, job: CostJob, output: Path, cache_output: Path | None = None
) -> pl.DataFrame:
    """The cost table from every job's time (`benchmarks_dir`) and request counts (`logs_dir`); with `cache_output`,
    the request cache's size too (CACHE_SCHEMA: one row)."""
    table = cost_table(
        job_times(benchmarks_dir, job.models, job.benchmarks),
        job,
        job_requests(logs_dir, job.models, job.benchmarks),
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(output)
    if cache_output is not None:
        stats = RequestCache(job.cache_dir).stats() if job.cache_dir else None
        row = {"directory": job.cache_dir, "entries": stats and stats.entries, "bytes": stats and stats.bytes}
        pl.DataFrame([row], schema=CACHE_SCHEMA).write_parquet(cache_output)
    return table


def model_totals(cost: pl.DataFrame) -> pl.DataFrame:
    """Per model: every result's cost summed (the cost page's x axis): this run's wall seconds and GPU-seconds, and
    what the results needed (read or computed: comparable whatever the cache answered): tokens, the engine's
    GPU-seconds and seconds (this run's computed tokens where a record predates the needed counts). The needed
    seconds of a model with an LLM job's record that predates them are null, unknown: not the sum of the others, nor
    0 (a result no LLM job made needed none)."""
    spent = pl.col("prompt_tokens").fill_null(0) + pl.col("generated_tokens").fill_null(0)
    needed = pl.col("needed_prompt_tokens") + pl.col("needed_generated_tokens")
    known = [
        pl.when((pl.col(column).is_null() & pl.col("computed_requests").is_not_null()).any())
        .then(None)
        .otherwise(pl.col(column).fill_null(0).sum())
        .alias(column)
        for column in ("needed_gpu_seconds", "needed_seconds")
    ]
    return cost.group_by("model").agg(
        pl.col("wall_seconds").sum(),
        pl.col("gpu_seconds").sum(),
        pl.when(needed.is_null()).then(spent).otherwise(needed).sum().alias("tokens"),
        *known,
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
