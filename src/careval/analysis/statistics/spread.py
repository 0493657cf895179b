"""Per-sample spread of a metric over repeated outputs (rephrasings, samples): scoring, variance, scaled variance, CV."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from careval.metrics.registry import VALUED_STATUSES
from careval.schemas import REPEAT_SCORE_SCHEMA, SPREAD_SCHEMA
from careval.scoring import score_perplexity, score_text

# A separator no sample id contains: repeats are scored in one call per family as "<id>\x1f<repeat>".
SEPARATOR = "\x1f"


def repeat_key() -> pl.Expr:
    """One id per sample and repeat ("<id>\x1f<repeat>"), so a scorer of one output per id scores every repeat."""
    return pl.col("id") + SEPARATOR + pl.col("repeat").cast(pl.String)


def unkey_repeats(scores: pl.DataFrame) -> pl.DataFrame:
    """Sample-level score rows keyed by repeat_key() back to id and repeat (REPEAT_SCORE_SCHEMA)."""
    parts = scores["id"].str.split_exact(SEPARATOR, 1)
    return scores.select(
        id=parts.struct.field("field_0"),
        repeat=parts.struct.field("field_1").cast(pl.Int64),
        metric="metric",
        value="value",
        status="status",
    ).cast(REPEAT_SCORE_SCHEMA)


def score_repeats(
    samples: pl.DataFrame, repeats: pl.DataFrame, families: list[str], options: dict | None = None, min_chars: int = 1
) -> pl.DataFrame:
    """Every text metric of `families` on every repeated output, through the same scorer as the main scores.

    All repeats go through one score_text call per family, so a model-based metric (BERTScore) loads once.
    """
    options = options or {}
    keyed = repeats.with_columns(key=repeat_key())
    generations = keyed.select(id="key", output="output", status="status")
    references = keyed.join(samples.select("id", "reference"), on="id", how="left", maintain_order="left")
    frames = []
    for family in families:
        scores = score_text(
            family, references.select(id="key", reference="reference"), generations, options.get(family, {}), min_chars
        )
        frames.append(scores.filter(pl.col("level") == "sample"))
    if not frames:
        return pl.DataFrame(schema=REPEAT_SCORE_SCHEMA)
    return unkey_repeats(pl.concat(frames))


def score_repeat_perplexity(samples: pl.DataFrame, logliks: pl.DataFrame) -> pl.DataFrame:
    """The perplexity family once per repeat pass of log-likelihoods (column `repeat`), through score_perplexity."""
    frames = []
    for (repeat,), group in logliks.group_by("repeat", maintain_order=True):
        scores = score_perplexity(samples, group.drop("repeat")).filter(pl.col("level") == "sample")
        frames.append(
            scores.select("id", repeat=pl.lit(repeat, dtype=pl.Int64), metric="metric", value="value", status="status")
        )
    return pl.concat(frames).cast(REPEAT_SCORE_SCHEMA) if frames else pl.DataFrame(schema=REPEAT_SCORE_SCHEMA)


def score_repeat_file(
    samples_path: Path,
    repeats_path: Path,
    families: list[str],
    options: dict | None,
    output: Path,
    loglik_path: Path | None = None,
    min_chars: int = 1,
) -> None:
    """Job: score a file of repeated outputs (and, for self-consistency, its per-repeat log-likelihoods)."""
    samples = pl.read_parquet(samples_path)
    frames = [score_repeats(samples, pl.read_parquet(repeats_path), families, options, min_chars)]
    if loglik_path is not None:
        frames.append(score_repeat_perplexity(samples, pl.read_parquet(loglik_path)))
    output.parent.mkdir(parents=True, exist_ok=True)
    pl.concat(frames).sort("metric", "id", "repeat").write_parquet(output)


def per_sample_spread(scores: pl.DataFrame) -> pl.DataFrame:
    """Per sample and metric over the ok repeats: n, mean, population variance (ddof 0) and CV = std / mean.

    ddof 0 because the paper's CV (appendix C.2) divides by N. The CV is undefined (NaN) when the mean
    is 0, and the variance when fewer than two repeats scored ok.
    """
    ok = scores.filter(pl.col("status").is_in(VALUED_STATUSES) & pl.col("value").is_finite())
    spread = ok.group_by("id", "metric", maintain_order=True).agg(
        n=pl.len(), mean=pl.col("value").mean(), variance=pl.col("value").var(ddof=0)
    )
    return (
        spread.with_columns(
            variance=pl.when(pl.col("n") >= 2).then(pl.col("variance")).otherwise(None),
        )
        .with_columns(
            cv=pl.when(pl.col("mean") != 0).then(pl.col("variance").sqrt() / pl.col("mean")).otherwise(None),
        )
        .fill_nan(None)
    )


def observed_intervals(scores: pl.DataFrame) -> dict[str, float]:
    """max - min of each metric over every ok value given (all models, samples and repeats of a benchmark)."""
    ok = scores.filter(pl.col("status").is_in(VALUED_STATUSES) & pl.col("value").is_finite())
    table = ok.group_by("metric").agg(interval=pl.col("value").max() - pl.col("value").min())
    return dict(table.iter_rows())


def scale_variance(variance: float | None, interval: float | None) -> float:
    """A variance divided by an interval (max - min), the paper's scaling (appendix C.1) of either reading.

    Divided by the interval itself, as the paper states, not by its square. A zero variance stays 0 even
    when the interval is 0 (a metric constant over everything is perfectly stable).
    """
    if variance is None or (isinstance(variance, float) and math.isnan(variance)):
        return float("nan")
    if variance == 0:
        return 0.0
    if not interval:
        return float("nan")
    return float(variance) / float(interval)


def variance_intervals(spread: pl.DataFrame) -> dict[str, float]:
    """max - min of each metric's variance column (every model and sample of a benchmark): C.1's 'column'."""
    defined = spread.filter(pl.col("variance").is_not_null() & pl.col("variance").is_finite())
    table = defined.group_by("metric").agg(interval=pl.col("variance").max() - pl.col("variance").min())
    return dict(table.iter_rows())


def spread_table(score_files: list[tuple[str, str, Path]]) -> pl.DataFrame:
    """Per model x benchmark x sample x metric spread, variances scaled per benchmark and metric across all models.

    Appendix C.1: "we scale variances by dividing by the max interval (max value - min value) in each column".
    The column is read as the metric's column of variances (every model and sample of the benchmark), so each
    metric's scaled variances span at most 1 whatever its unit: `scaled_variance`, the default of figures 13-15.
    `scaled_variance_value_range` keeps careval's earlier reading, the max - min of the metric's values, which
    keeps the metric's unit (a 1-5 judge grade weighs about 4x against ROUGE); analysis.resilience.scaling picks.
    """
    by_benchmark: dict[str, list[tuple[str, pl.DataFrame]]] = {}
    for model, benchmark, path in score_files:
        by_benchmark.setdefault(benchmark, []).append((model, pl.read_parquet(path)))
    frames = []
    for benchmark, items in by_benchmark.items():
        intervals = observed_intervals(pl.concat([scores for _, scores in items]))
        spreads = [
            per_sample_spread(scores).with_columns(model=pl.lit(model), benchmark=pl.lit(benchmark))
            for model, scores in items
        ]
        variance_ranges = variance_intervals(pl.concat(spreads))
        for spread in spreads:
            pairs = spread.select("metric", "variance").rows()
            frames.append(
                spread.with_columns(
                    scaled_variance=pl.Series(
                        [scale_variance(v, variance_ranges.get(m)) for m, v in pairs], dtype=pl.Float64
                    ),
                    scaled_variance_value_range=pl.Series(
                        [scale_variance(v, intervals.get(m)) for m, v in pairs], dtype=pl.Float64
                    ),
                )
            )
    if not frames:
        return pl.DataFrame(schema=SPREAD_SCHEMA)
    return pl.concat(frames, how="diagonal").select(list(SPREAD_SCHEMA)).cast(SPREAD_SCHEMA).fill_nan(None)


def across_models(spread: pl.DataFrame, column: str) -> pl.DataFrame:
    """The paper's 'averaged across models': per benchmark, sample and metric, the mean of `column` over models."""
    return (
        spread.filter(pl.col(column).is_not_null())
        .group_by("benchmark", "id", "metric", maintain_order=True)
        .agg(pl.col(column).mean(), n_models=pl.len())
    )
