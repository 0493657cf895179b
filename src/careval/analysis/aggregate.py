"""Reduce per-sample score files to the tidy summary table: model, benchmark, task, metric, value, n."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from careval.metrics.accuracy import weighted_average
from careval.metrics.registry import (
    JUDGE_EXPECTED_SUFFIX,
    JUDGE_PREFIX,
    JUDGE_VERDICT_STATUSES,
    VALUED_STATUSES,
    metric_spec,
)
from careval.schemas import JUDGE_VERDICTS_SCHEMA, SUMMARY_SAMPLE_SCHEMA, SUMMARY_SCHEMA

MCQA_AVERAGE = "mcqa_weighted_average"
# the metrics it averages (and writes)
MCQA_AVERAGE_METRICS = ("acc", "acc_norm")


@dataclass(frozen=True)
class ScoreFile:
    model: str
    benchmark: str
    task: str
    path: Path


def summarise_scores(scores: pl.DataFrame) -> list[dict]:
    """One row per metric: the corpus value where the metric defines one, else the weighted mean of ok samples
    (status ok, or a judge grade read from the judge's distribution: registry.VALUED_STATUSES;
    geometric where the registry says so: Relaxed Perplexity).

    n counts the samples scored ok and n_failed the others (empty output, parse error, ...), so a
    failure is visible in the table instead of hiding as a zero.
    """
    samples = scores.filter(pl.col("level") == "sample")
    ok_ids = samples.filter(pl.col("status").is_in(VALUED_STATUSES))["id"].unique()
    n_ok = ok_ids.len()
    n_failed = samples.filter(~pl.col("id").is_in(ok_ids.implode()))["id"].n_unique()
    rows = []
    corpus = scores.filter(pl.col("level") == "corpus")
    for metric, value, status in corpus.select("metric", "value", "status").iter_rows():
        rows.append(
            {"metric": metric, "value": value if status == "ok" else float("nan"), "n": n_ok, "n_failed": n_failed}
        )
    corpus_metrics = set(corpus["metric"])
    for (metric,), group in samples.group_by("metric", maintain_order=True):
        if metric in corpus_metrics:
            continue
        ok = group.filter(pl.col("status").is_in(VALUED_STATUSES))
        total_weight: float = ok["weight"].sum()
        # the registry says how samples combine (the bootstrap recomputes the same statistic)
        geometric = metric_spec(metric).average == "geometric"
        values = ok["value"].log() if geometric else ok["value"]
        value = float((values * ok["weight"]).sum() / total_weight) if ok.height and total_weight else float("nan")
        value = math.exp(value) if geometric else value
        rows.append({"metric": metric, "value": value, "n": ok.height, "n_failed": group.height - ok.height})
    return rows


def skipped_counts(report_paths: list[str | Path]) -> dict[str, int]:
    """benchmark -> rows skipped at normalisation, from the reports beside the samples (datasets/normalise.report_path)."""
    counts = {}
    for path in report_paths:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        counts[report["benchmark"]] = int(report["n_skipped"])
    return counts


def build_summary(
    score_files: list[ScoreFile], skipped: dict[str, int] | None = None, mcqa_average: list[str] | None = None
) -> pl.DataFrame:
    """The summary; `skipped` (skipped_counts) fills n_skipped, and must then cover every benchmark scored.

    `mcqa_average`: the benchmarks of mcqa_weighted_average (the plan's analysis.mcqa_average); None: every
    mcqa benchmark scored.
    """
    if skipped is not None:
        lacking = sorted({item.benchmark for item in score_files} - set(skipped))
        if lacking:
            raise ValueError(f"no normalisation report for benchmark(s) {', '.join(lacking)}")
    rows = []
    for item in score_files:
        n_skipped = skipped[item.benchmark] if skipped is not None else None
        for row in summarise_scores(pl.read_parquet(item.path)):
            rows.append(
                {"model": item.model, "benchmark": item.benchmark, "task": item.task, **row, "n_skipped": n_skipped}
            )
    summary = pl.DataFrame(rows, schema=SUMMARY_SCHEMA)
    return pl.concat([summary, mcqa_weighted_averages(summary, mcqa_average)]).sort("model", "benchmark", "metric")


def mcqa_weighted_averages(summary: pl.DataFrame, members: list[str] | None = None) -> pl.DataFrame:
    """The paper's headline close-ended number: MCQA accuracy averaged with weights = questions per benchmark.

    Over `members` (None: every mcqa benchmark of the summary); members absent from the summary are left out.
    """
    mcqa = summary.filter(
        (pl.col("task") == "mcqa")
        & pl.col("metric").is_in(list(MCQA_AVERAGE_METRICS))
        & (pl.col("benchmark") != MCQA_AVERAGE)
    )
    if members is not None:
        mcqa = mcqa.filter(pl.col("benchmark").is_in(list(members)))
    rows = []
    for (model, metric), group in mcqa.group_by("model", "metric", maintain_order=True):
        pairs = list(zip(group["value"].to_list(), group["n"].to_list()))
        # polars sums nulls as 0: an unknown count of one member leaves the average's unknown
        n_skipped = None if group["n_skipped"].null_count() else int(group["n_skipped"].sum())
        rows.append(
            {
                "model": model,
                "benchmark": MCQA_AVERAGE,
                "task": "mcqa",
                "metric": metric,
                "value": weighted_average(pairs),
                "n": int(group["n"].sum()),
                "n_failed": int(group["n_failed"].sum()),
                "n_skipped": n_skipped,
            }
        )
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA)


def build_judge_verdicts(score_files: list[ScoreFile]) -> pl.DataFrame:
    """The share of judge verdicts that parsed and the share read from the distribution (JUDGE_VERDICTS_SCHEMA)."""
    rows = []
    for item in score_files:
        if item.path.stem != "judge":
            continue
        grades = pl.read_parquet(item.path).filter(
            pl.col("metric").str.starts_with(JUDGE_PREFIX) & ~pl.col("metric").str.ends_with(JUDGE_EXPECTED_SUFFIX)
        )
        for (metric,), group in grades.group_by("metric", maintain_order=True):
            counts = dict(group["status"].value_counts().iter_rows())
            parsed, read, failed = (counts.get(status, 0) for status in JUDGE_VERDICT_STATUSES)
            judged = parsed + read + failed
            rows.append(
                {
                    "model": item.model,
                    "benchmark": item.benchmark,
                    "metric": metric,
                    "n_judged": judged,
                    "n_parsed": parsed,
                    "n_from_distribution": read,
                    "n_parse_error": failed,
                    "n_not_judged": group.height - judged,
                    "share_parsed": parsed / judged if judged else None,
                    "share_from_distribution": read / judged if judged else None,
                }
            )
    return pl.DataFrame(rows, schema=JUDGE_VERDICTS_SCHEMA).sort("model", "benchmark", "metric")


def build_sample_table(score_files: list[ScoreFile]) -> pl.DataFrame:
    frames = []
    for item in score_files:
        rows = pl.read_parquet(item.path).filter(pl.col("level") == "sample")
        frames.append(
            rows.select(
                model=pl.lit(item.model),
                benchmark=pl.lit(item.benchmark),
                task=pl.lit(item.task),
                metric="metric",
                id="id",
                value="value",
                status="status",
                weight="weight",
            )
        )
    return pl.concat(frames).cast(SUMMARY_SAMPLE_SCHEMA) if frames else pl.DataFrame(schema=SUMMARY_SAMPLE_SCHEMA)


def write_summary(
    score_files: list[ScoreFile],
    output: Path,
    samples_output: Path | None = None,
    dataset_reports: list[str | Path] | None = None,
    judge_output: Path | None = None,
    mcqa_average: list[str] | None = None,
) -> pl.DataFrame:
    """The summary table and, when asked, the per-sample table beside it (the bootstrap needs the samples)
    and the judge's verdict shares (build_judge_verdicts).

    `dataset_reports`: the normalisation report of every benchmark (resources/datasets/<benchmark>.json),
    for n_skipped.
    """
    summary = build_summary(
        score_files, skipped_counts(dataset_reports) if dataset_reports is not None else None, mcqa_average
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    summary.write_parquet(output)
    if samples_output is not None:
        samples_output.parent.mkdir(parents=True, exist_ok=True)
        build_sample_table(score_files).write_parquet(samples_output)
    if judge_output is not None:
        judge_output.parent.mkdir(parents=True, exist_ok=True)
        build_judge_verdicts(score_files).write_parquet(judge_output)
    return summary


def score_files_from_paths(paths: list[str], tasks: dict[str, str]) -> list[ScoreFile]:
    """Read model and benchmark back from the layout <results>/scores/<model>/<benchmark>/<family>.parquet."""
    files = []
    for path in map(Path, paths):
        model, benchmark = path.parts[-3], path.parts[-2]
        files.append(ScoreFile(model=model, benchmark=benchmark, task=tasks[benchmark], path=path))
    return files
