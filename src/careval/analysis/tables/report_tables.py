"""Every table the analysis report draws, computed before any figure: correlations (with bootstrap intervals) per
model set, metric clusters, rankings, and the resilience / self-consistency spreads read from their jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from careval.analysis.elo import read_elo, resolve_elo_path
from careval.analysis.metric_view import in_view, open_in_view, without_anchor_extra
from careval.analysis.plan import ReportJob
from careval.analysis.statistics.bootstrap import resample_model_scores
from careval.analysis.statistics.clusters import cluster_metrics
from careval.analysis.statistics.correlations import ELO, Scores, set_correlations, square
from careval.analysis.statistics.rankings import rank_models
from careval.analysis.statistics.significance_groups import outcome as comparison_outcome, ranking_groups
from careval.schemas import CLUSTER_SCHEMA, SET_RANKING_SCHEMA
from careval.specs import JURY_REPORT_TABLES


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
    # appendix A's tables (careval.careqa.statistics): table4, table4_caption, categories, review; None: not drawn
    careqa: dict | None = None
    paper_tables: dict[str, pl.DataFrame] | None = None  # Appendix E: name -> its wide table (results/tables/)
    # the paired comparisons of the comparison pages' sets with each one's outcome (significance_groups.outcome),
    # their rankings' groups and adjacent counts; the cost table (None where no such page is drawn)
    comparisons: pl.DataFrame | None = None
    groups: pl.DataFrame | None = None
    adjacent: pl.DataFrame | None = None
    cost: pl.DataFrame | None = None
    request_cache: pl.DataFrame | None = None  # its size (careval.analysis.cost: CACHE_SCHEMA)
    # the jury's and the human-agreement tables (careval.jobs.jury_report), by name; {} where not planned
    jury: dict[str, pl.DataFrame] = field(default_factory=dict)
    # config `studies:`: every study's tests (STUDY_SCHEMA), each study's per-sample table by name, and paper Table 6
    studies: pl.DataFrame | None = None
    study_samples: dict[str, pl.DataFrame] = field(default_factory=dict)
    table6: pl.DataFrame | None = None


def metric_clusters(correlations: pl.DataFrame, job: ReportJob) -> pl.DataFrame:
    """The clusters of every metric x metric matrix (each metric x metric figure's model set and benchmark x method),
    CLUSTER_SCHEMA."""
    rows = []
    for figure in job.of_kind("metric_x_metric"):
        model_set, benchmark = figure.model_set, figure.benchmark
        for method in job.methods:
            block = correlations.filter(
                (pl.col("analysis") == "metric_x_metric")
                & (pl.col("model_set") == model_set)
                & (pl.col("benchmark") == benchmark)
                & (pl.col("method") == method)
            )
            labels, r = square(block, "r")
            clusters = cluster_metrics(labels, r, job.cluster_min_correlation, job.clusters)
            rows += [
                {"model_set": model_set, "benchmark": benchmark, "method": method, "cluster": c.name, "metric": m}
                for c in clusters
                for m in c.members
            ]
    return pl.DataFrame(rows, schema=CLUSTER_SCHEMA)


def analysis_tables(inputs: dict, job: ReportJob) -> AnalysisTables:
    """inputs: summary, samples (per-sample table), resilience, consistency (optional tables), elo (optional CSV);
    job: the figures to draw and the settings of their tables (bootstrap, clusters)."""
    summary = pl.read_parquet(inputs["summary"])
    boot = job.bootstrap
    samples = pl.read_parquet(inputs["samples"]) if inputs.get("samples") and boot is not None else None
    # analysis.metric_view: the correlations, clusters and rankings see only the view's metrics
    anchor = job.relaxed_perplexity_anchor
    full_summary = summary
    summary = in_view(summary, job.view_metrics, anchor)
    samples = None if samples is None else in_view(samples, job.view_metrics, anchor)
    fixed = {ELO: read_elo(resolve_elo_path(inputs["elo"]))} if inputs.get("elo") else {}
    mcqa_average = None if job.mcqa_average is None else list(job.mcqa_average)
    cache: dict[str, Scores] = {}

    def scores_of(name: str) -> Scores:
        """The scores of exactly the set's models: the correlations and their bootstrap see no other model."""
        if name not in cache:
            keep = pl.col("model").is_in(list(job.model_sets[name]))
            if samples is None:
                cache[name] = Scores(summary.filter(keep), fixed=fixed)
            else:
                # the average over the members the summary averaged, so the interval is that number's
                resampled = resample_model_scores(samples.filter(keep), boot.resamples, boot.seed, mcqa_average)
                cache[name] = Scores(summary.filter(keep), resampled, boot.confidence, fixed)
        return cache[name]

    correlations = set_correlations(scores_of, job.sets, list(job.methods), anchor, dict(job.paper_tasks))
    correlations = without_anchor_extra(correlations, job.view_metrics, anchor)
    rankings = [pl.DataFrame(schema=SET_RANKING_SCHEMA)]
    for figure in job.of_kind("rankings"):
        # figure 18 ranks the anchor's models by its Relaxed Perplexity too (the view keeps it there): the paper draws
        # it in the Relaxed Perplexity appendix, OLAPH's ranking under the eleven and the new metric
        ranked = rank_models(in_view(scores_of(figure.model_set).summary, job.view_metrics, anchor), figure.benchmark)
        rankings.append(ranked.select(pl.lit(figure.model_set, pl.String).alias("model_set"), *ranked.columns))
    tables_dir = inputs.get("paper_tables")
    comparisons = groups = adjacent = None
    if job.of_kind("comparisons") and inputs.get("comparisons"):
        # the pages show the view's metrics (comparisons.parquet keeps every metric)
        viewed = summary.select("benchmark", "metric").unique()
        compared = pl.read_parquet(inputs["comparisons"]).join(viewed, on=["benchmark", "metric"], how="semi")
        alpha, adjust = job.comparison_alpha, job.comparison_adjust
        comparisons = comparison_outcome(compared, alpha, adjust)
        parts = [
            ranking_groups(compared, summary, name, job.model_sets[name], alpha, adjust)
            for name in job.sets("comparisons")
        ]
        groups, adjacent = pl.concat([g for g, _ in parts]), pl.concat([a for _, a in parts])
    return AnalysisTables(
        comparisons=comparisons,
        groups=groups,
        adjacent=adjacent,
        cost=pl.read_parquet(inputs["cost"]) if job.of_kind("cost") and inputs.get("cost") else None,
        request_cache=pl.read_parquet(inputs["request_cache"])
        if job.of_kind("cost") and inputs.get("request_cache")
        else None,
        summary=full_summary,
        correlations=correlations,
        clusters=metric_clusters(correlations, job),
        rankings=pl.concat(rankings),
        # figures 2 and 13-16 show the view's metrics too
        resilience=open_in_view(pl.read_parquet(inputs["resilience"]), job.view_metrics)
        if job.of_kind("resilience")
        else None,
        consistency=open_in_view(pl.read_parquet(inputs["consistency"]), job.view_metrics)
        if job.of_kind("consistency")
        else None,
        elo_path=inputs.get("elo"),
        set_labels={name: f"{len(scores_of(name).models)} models of set '{name}'" for name in job.model_sets},
        careqa=careqa_tables(inputs) if job.of_kind("careqa_table4") else None,
        paper_tables={name: pl.read_csv(Path(tables_dir) / f"{name}.csv") for name in job.paper_tables}
        if tables_dir
        else None,
        jury={key: pl.read_parquet(inputs[key]) for key in JURY_REPORT_TABLES if inputs.get(key)},
        studies=pl.read_parquet(inputs["studies"]) if inputs.get("studies") else None,
        study_samples={Path(path).parent.name: pl.read_parquet(path) for path in inputs.get("study_tables") or []},
        table6=pl.read_csv(inputs["table6"]) if inputs.get("table6") else None,
    )


def careqa_tables(inputs: dict[str, Path | None]) -> dict:
    """The CareQA statistics job's tables: Table 4 (CSV, caption from its Markdown's first line), the categories per
    year and the review correctness."""
    caption = Path(inputs["careqa_table4_md"]).read_text().splitlines()[0].strip("*")
    return {
        "table4": pl.read_csv(inputs["careqa_table4"]),
        "table4_caption": caption,
        "categories": pl.read_parquet(inputs["careqa_categories"]),
        "review": pl.read_parquet(inputs["careqa_review"]),
    }
