"""Every table the analysis report draws, computed before any figure: correlations (with bootstrap intervals) per
model set, metric clusters, rankings, and the resilience / self-consistency spreads read from their jobs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from careval.analysis.bootstrap import resample_model_scores
from careval.analysis.clusters import cluster_metrics
from careval.analysis.correlations import ELO, Scores, set_correlations, square
from careval.analysis.elo import read_elo, resolve_elo_path
from careval.analysis.plan import AnalysisPlan
from careval.analysis.rankings import rank_models
from careval.schemas import CLUSTER_SCHEMA, SET_RANKING_SCHEMA


@dataclass(frozen=True)
class AnalysisTables:
    summary: pl.DataFrame
    correlations: pl.DataFrame  # SET_CORRELATION_SCHEMA
    clusters: pl.DataFrame  # CLUSTER_SCHEMA, each cluster's members in order, clusters in order
    rankings: pl.DataFrame  # SET_RANKING_SCHEMA
    resilience: pl.DataFrame | None
    consistency: pl.DataFrame | None
    elo_path: Path | None
    set_labels: dict[str, str]  # model set -> "<n> models of set '<name>'" (figure titles)


def metric_clusters(correlations: pl.DataFrame, plan: AnalysisPlan, settings: dict) -> pl.DataFrame:
    """The clusters of every metric x metric matrix (model set x open benchmark x method), CLUSTER_SCHEMA."""
    rows = []
    for model_set in plan.sets("metric_x_metric"):
        for benchmark in plan.open_benchmarks:
            for method in plan.methods:
                block = correlations.filter(
                    (pl.col("analysis") == "metric_x_metric")
                    & (pl.col("model_set") == model_set)
                    & (pl.col("benchmark") == benchmark)
                    & (pl.col("method") == method)
                )
                labels, r = square(block, "r")
                clusters = cluster_metrics(
                    labels, r, settings.get("cluster_min_correlation", 0.7), settings.get("clusters")
                )
                rows += [
                    {"model_set": model_set, "benchmark": benchmark, "method": method, "cluster": c.name, "metric": m}
                    for c in clusters
                    for m in c.members
                ]
    return pl.DataFrame(rows, schema=CLUSTER_SCHEMA)


def analysis_tables(inputs: dict[str, Path | None], plan: AnalysisPlan, settings: dict) -> AnalysisTables:
    """inputs: summary, samples (per-sample table), resilience, consistency (optional tables), elo (optional CSV).
    settings: the config's `analysis` section (bootstrap, cluster_min_correlation, clusters)."""
    summary = pl.read_parquet(inputs["summary"])
    boot = settings.get("bootstrap", {})
    samples = None
    if inputs.get("samples") and boot.get("resamples", 0) > 0:
        samples = pl.read_parquet(inputs["samples"])
    fixed = {ELO: read_elo(resolve_elo_path(inputs["elo"]))} if plan.elo else {}
    cache: dict[str, Scores] = {}

    def scores_of(name: str) -> Scores:
        """The scores of exactly the set's models: the correlations and their bootstrap see no other model."""
        if name not in cache:
            keep = pl.col("model").is_in(list(plan.model_sets[name]))
            resampled = None
            if samples is not None:
                # the average over the members the summary averaged, so the interval is that number's
                resampled = resample_model_scores(
                    samples.filter(keep), boot["resamples"], boot.get("seed", 1234), plan.mcqa_average
                )
            cache[name] = Scores(summary.filter(keep), resampled, boot.get("confidence", 0.95), fixed)
        return cache[name]

    correlations = set_correlations(scores_of, plan.sets, plan.methods, plan.relaxed_perplexity_anchor)
    rankings = [pl.DataFrame(schema=SET_RANKING_SCHEMA)]
    for model_set in plan.sets("rankings"):
        for benchmark in plan.open_benchmarks:
            ranked = rank_models(scores_of(model_set).summary, benchmark)
            rankings.append(ranked.select(pl.lit(model_set, pl.String).alias("model_set"), *ranked.columns))
    return AnalysisTables(
        summary=summary,
        correlations=correlations,
        clusters=metric_clusters(correlations, plan, settings),
        rankings=pl.concat(rankings),
        resilience=pl.read_parquet(inputs["resilience"]) if plan.resilience_benchmarks else None,
        consistency=pl.read_parquet(inputs["consistency"]) if plan.consistency_benchmarks else None,
        elo_path=inputs.get("elo"),
        set_labels={name: f"{len(scores_of(name).models)} models of set '{name}'" for name in plan.model_sets},
    )
