"""The tables of the studies (config `studies:`, careval.plan.studies): each study's per-sample values per variant, and
every variant against its model's baseline: the paired test of the model comparisons, Holm within the study, and
Kendall's tau between the models' rankings under the variant and under the baseline.

The tests are careval.analysis.statistics.comparisons' own (McNemar's exact test on 0/1 metrics, the paired sign-flip
permutation test otherwise, the paired bootstrap interval), on the samples the variant and the baseline both scored.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from careval.analysis.aggregate import ScoreFile, build_sample_table
from careval.analysis.statistics.comparisons import (
    ComparisonsJob,
    Draws,
    block_seed,
    blocks_of,
    compare_block,
    model_sums,
    pair_sums_under,
    percentile_interval,
    statistic,
)
from careval.analysis.statistics.exact import correlation_test
from careval.analysis.statistics.multiplicity import adjust
from careval.analysis.statistics.spread import per_sample_spread
from careval.canonical import JobSpec, job_spec
from careval.metrics.registry import REPHRASE_VARIANCE, VALUED_STATUSES, metric_spec
from careval.schemas import REPEAT_SCORE_SCHEMA, STUDY_SAMPLE_SCHEMA, STUDY_SCHEMA, SUMMARY_SAMPLE_SCHEMA


@job_spec
class SourceLabel(JobSpec):
    """Whose per-sample file an input of a study's table is (careval.plan.study.StudySource without its path)."""

    variant: str
    model: str
    benchmark: str
    task: str
    family: str  # a metric family, or (a study of the resilience analysis) rephrase_scores / rephrase_judge
    run: int


@job_spec
class StudyTableJob(JobSpec):
    """study_sample_scores: one study's per-sample table from its inputs (labelled in input order)."""

    study: str
    kind: str  # model | metric | analysis
    sources: tuple[SourceLabel, ...]


@job_spec
class StudySummary(JobSpec):
    """What the summary reads of one study: its models' baselines and its variants in order."""

    name: str
    variants: tuple[str, ...]  # the swept variants, in grid order
    baselines: dict[str, str]  # model -> the variant that is its baseline (a swept one, or "baseline")
    kind: str


@job_spec
class StudyPage(JobSpec):
    """What a study's report page says (careval.analysis.figures.studies): its question, what it sweeps, its variants,
    each model's baseline and label."""

    name: str
    description: str
    section: str
    kind: str
    variants: tuple[str, ...]
    baselines: dict[str, str]
    labels: dict[str, str]  # model -> its display name


@job_spec
class StudiesJob(JobSpec):
    """studies_summary: every study, and the paired tests' settings (analysis.comparisons)."""

    studies: tuple[StudySummary, ...]
    resamples: int
    permutations: int
    exact_limit: int
    confidence: float
    seed: int


# --- a study's per-sample table


def rephrase_variances(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Per sample and metric: the variance over the sample's rephrasings (careval.analysis.statistics.spread: population
    variance over the valued repeats), averaged over the runs whose variance is defined; `runs`: how many."""
    spreads = [per_sample_spread(frame).select("id", "metric", "variance") for frame in frames]
    if not spreads:
        return pl.DataFrame(schema={"id": pl.String, "metric": pl.String, "variance": pl.Float64, "runs": pl.UInt32})
    return (
        pl.concat(spreads)
        .group_by("id", "metric", maintain_order=True)
        .agg(runs=pl.col("variance").count(), variance=pl.col("variance").mean())
        .select("id", "metric", "variance", "runs")
    )


def study_table(job: StudyTableJob, paths: list[Path]) -> pl.DataFrame:
    """The study's per-sample table (STUDY_SAMPLE_SCHEMA): every variant's values of every model, benchmark, metric."""
    if job.kind != "analysis":
        frames = [
            build_sample_table([ScoreFile(label.model, label.benchmark, label.task, path)]).with_columns(
                variant=pl.lit(label.variant)
            )
            for label, path in zip(job.sources, paths)
        ]
        return (
            pl.concat(frames).select(list(STUDY_SAMPLE_SCHEMA)) if frames else pl.DataFrame(schema=STUDY_SAMPLE_SCHEMA)
        )
    groups: dict[tuple[str, str, str, str], list[pl.DataFrame]] = {}
    for label, path in zip(job.sources, paths):
        key = (label.variant, label.model, label.benchmark, label.task)
        groups.setdefault(key, []).append(
            pl.read_parquet(path).select(list(REPEAT_SCORE_SCHEMA)).with_columns(run=pl.lit(label.run))
        )
    frames = []
    for (variant, model, benchmark, task), parts in groups.items():
        runs = pl.concat(parts)
        per_run = [frame.drop("run") for _, frame in runs.group_by("run", maintain_order=True)]
        variances = rephrase_variances(per_run)
        frames.append(
            variances.select(
                model=pl.lit(model),
                benchmark=pl.lit(benchmark),
                task=pl.lit(task),
                metric=pl.col("metric") + REPHRASE_VARIANCE,
                id="id",
                value="variance",
                status=pl.when(pl.col("variance").is_not_null()).then(pl.lit("ok")).otherwise(pl.lit("no_variance")),
                weight=pl.lit(1.0),
                variant=pl.lit(variant),
            )
        )
    if not frames:
        return pl.DataFrame(schema=STUDY_SAMPLE_SCHEMA)
    return (
        pl.concat(frames)
        .cast(STUDY_SAMPLE_SCHEMA)
        .sort("variant", "model", "benchmark", "metric", "id", maintain_order=True)
    )


def write_study_table(job: StudyTableJob, paths: list[str], output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    study_table(job, [Path(p) for p in paths]).write_parquet(output)


# --- every variant against its model's baseline


def value_of(values: np.ndarray, weights: np.ndarray, geometric: bool) -> float:
    """A model's benchmark value from its valued samples, as the summary computes it (careval.analysis.aggregate)."""
    if not len(values) or not weights.sum():
        return math.nan
    if geometric:
        return float(np.exp((np.log(values) * weights).sum() / weights.sum()))
    return float((values * weights).sum() / weights.sum())


def model_values(samples: pl.DataFrame) -> dict[tuple[str, str, str], float]:
    """(model, benchmark, metric) -> the benchmark value over the model's valued samples."""
    valued = samples.filter(pl.col("status").is_in(VALUED_STATUSES) & pl.col("value").is_finite())
    out = {}
    for (model, benchmark, metric), group in valued.group_by("model", "benchmark", "metric"):
        geometric = metric_spec(metric).average == "geometric"
        out[(model, benchmark, metric)] = value_of(group["value"].to_numpy(), group["weight"].to_numpy(), geometric)
    return out


def kendall(variant: dict[str, float], baseline: dict[str, float]) -> tuple[float, float, int]:
    """Kendall's tau-b between two rankings of the same models, its p exact over fewer than 10 models (all n!
    pairings), and how many are ranked; NaN unless at least three models are ranked and the study changed at
    least one of their values (else the two rankings are one ranking, and tau says nothing)."""
    models = [m for m in variant if m in baseline and math.isfinite(variant[m]) and math.isfinite(baseline[m])]
    changed = any(variant[m] != baseline[m] for m in models)
    if len(models) < 3 or not changed:
        return math.nan, math.nan, len(models)
    tau, p, _ = correlation_test([variant[m] for m in models], [baseline[m] for m in models], "kendall")
    return tau, p, len(models)


def smallest_p(test: str, n: int, permutations: int) -> float:
    """The smallest two-sided p the test can give over n paired samples, whatever their values: 2 / 2^n for the exact
    tests (McNemar's on n discordant pairs, the sign flip with every difference non-zero: only the observed pattern
    and its mirror reach the extreme), 1 / (permutations + 1) for the Monte Carlo sign flip, and 0 for the two-level
    bootstrap's tail. A cell whose smallest p is above alpha cannot be significant: the page says so instead."""
    if n <= 0:
        return math.nan
    if test in ("mcnemar_exact", "permutation_exact"):
        return min(1.0, 2.0 ** (1 - n))
    if test == "permutation_monte_carlo":
        return 1 / (permutations + 1)
    return 0.0


def _paired(samples: pl.DataFrame, variant: str, baseline: str, job: ComparisonsJob) -> list[dict]:
    """Per benchmark x metric of one model's rows: the variant against the baseline on the samples both scored."""
    labelled = samples.filter(pl.col("variant").is_in([variant, baseline])).with_columns(model=pl.col("variant"))
    pair = np.array([[0, 1]])
    rows = []
    for benchmark, metric, block in blocks_of(labelled, [variant, baseline]):
        draws = Draws.draw(block_seed(job.seed, benchmark, metric), len(block.ids), job.resamples, job.permutations)
        result = compare_block(block, pair, metric, job, draws)
        geometric = metric_spec(metric).average == "geometric"
        sums = model_sums(block, geometric)
        xa, wa, xb, wb = (part[:, 0] for part in pair_sums_under(sums, pair, np.ones((1, len(block.ids)))))
        # each arm's own interval: its statistic on the same paired resamples (the samples both scored)
        ra, rwa, rb, rwb = (part[0] for part in pair_sums_under(sums, pair, draws.counts))
        (a_low, b_low), (a_high, b_high) = percentile_interval(
            np.vstack([statistic(ra, rwa, geometric), statistic(rb, rwb, geometric)]), job.confidence
        )
        rows.append(
            {
                "benchmark": benchmark,
                "metric": metric,
                "value": float(statistic(xa, wa, geometric)[0]),
                "value_low": float(a_low),
                "value_high": float(a_high),
                "baseline_value": float(statistic(xb, wb, geometric)[0]),
                "baseline_low": float(b_low),
                "baseline_high": float(b_high),
                **{key: result[key][0] for key in ("n", "n_dropped", "diff", "ci_low", "ci_high", "effect_size")},
                "p_value": result["p_value"][0],
                "test": str(result["test"][0]),
                "min_p": smallest_p(str(result["test"][0]), int(result["n"][0]), job.permutations),
            }
        )
    return rows


def study_rows(table: pl.DataFrame, study: StudySummary, main: pl.DataFrame, job: StudiesJob) -> pl.DataFrame:
    """Every variant of one study against each model's baseline (STUDY_SCHEMA), p-values Holm-adjusted within it."""
    comparisons = ComparisonsJob(
        model_sets={},
        resamples=job.resamples,
        permutations=job.permutations,
        exact_limit=job.exact_limit,
        confidence=job.confidence,
        alpha=0.05,
        power=0.8,
        seed=job.seed,
        two_level=False,
    )
    values = model_values(table.with_columns(model=pl.col("model") + "\0" + pl.col("variant")))
    # the run's own values of the models the study leaves alone: they rank beside the study's models
    others = model_values(main.filter(~pl.col("model").is_in(list(study.baselines))))
    rows = []
    for model, baseline in study.baselines.items():
        own = table.filter(pl.col("model") == model)
        for variant in study.variants:
            if variant == baseline:
                continue
            for row in _paired(own, variant, baseline, comparisons):
                under = {
                    m: values.get(
                        (f"{m}\0{variant if m == model else study.baselines[m]}", row["benchmark"], row["metric"]),
                        math.nan,
                    )
                    for m in study.baselines
                }
                before = {
                    m: values.get((f"{m}\0{b}", row["benchmark"], row["metric"]), math.nan)
                    for m, b in study.baselines.items()
                }
                for (m, benchmark, metric), value in others.items():
                    if (benchmark, metric) == (row["benchmark"], row["metric"]):
                        under[m] = before[m] = value
                tau, p, ranked = kendall(under, before)
                rows.append(
                    {
                        "study": study.name,
                        "variant": variant,
                        "baseline": baseline,
                        "model": model,
                        **row,
                        "kendall_tau": tau,
                        "kendall_p": p,
                        "n_ranked": ranked,
                    }
                )
    frame = pl.DataFrame(rows, schema={k: v for k, v in STUDY_SCHEMA.items() if k != "p_holm"})
    holm = adjust(frame["p_value"].to_numpy().astype(float), "holm") if frame.height else np.array([])
    return frame.with_columns(p_holm=pl.Series(holm, dtype=pl.Float64)).select(list(STUDY_SCHEMA))


def studies_table(job: StudiesJob, tables: list[Path], main_samples: Path) -> pl.DataFrame:
    main = pl.read_parquet(main_samples) if tables else pl.DataFrame(schema=SUMMARY_SAMPLE_SCHEMA)
    frames = [study_rows(pl.read_parquet(path), study, main, job) for study, path in zip(job.studies, tables)]
    return pl.concat(frames) if frames else pl.DataFrame(schema=STUDY_SCHEMA)


def write_studies(job: StudiesJob, tables: list[str], main_samples: str, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    studies_table(job, [Path(p) for p in tables], Path(main_samples)).write_parquet(output)
