"""analysis.metric_view: which open-ended metrics the correlation figures, rankings and metric clusters use.

`paper`: the paper's eleven (section 2.2; careval.metrics.registry.paper_metrics), the view of figures 1,
2, 10-18, of section 3.3's clusters, of the paired comparisons' pages and of the study pages (the schema's
description of analysis.metric_view lists the same). Close-ended tasks keep every metric (figure 1 correlates the MCQA
average with "all other close-ended and open-ended tasks and metrics"); figure 17 keeps its anchor's Relaxed
Perplexity, the one score it correlates with the rest, and figure 18 ranks the anchor's models by it too (the
paper draws OLAPH's ranking in its Relaxed Perplexity appendix). `all`: every metric careval writes.
"""

from __future__ import annotations

import polars as pl

from careval.analysis.statistics.correlations import RELAXED_PERPLEXITY
from careval.analysis.tables.paper_tables import TASK_ROW

# The analyses whose rows name a benchmark's metric (x / y / metric) and so would show the anchor's Relaxed
# Perplexity beside the eleven; figure 17's own analysis keeps it.
NAMED_METRIC_ANALYSES = ("mcqa_vs_open", "metric_x_metric", "benchmark_x_benchmark")


def in_view(table: pl.DataFrame, metrics: tuple[str, ...] | None, anchor: str | None = None) -> pl.DataFrame:
    """Rows of a summary or per-sample table in the view: close-ended rows, the view's open-ended metrics and,
    where `anchor` is given, the anchor's Relaxed Perplexity. `metrics` None: the whole table (view `all`)."""
    if metrics is None:
        return table
    keep = (pl.col("task") != "open") | pl.col("metric").is_in(list(metrics))
    if anchor is not None:
        keep = keep | ((pl.col("benchmark") == anchor) & (pl.col("metric") == RELAXED_PERPLEXITY))
    return table.filter(keep)


def open_in_view(table: pl.DataFrame, metrics: tuple[str, ...] | None) -> pl.DataFrame:
    """Rows of a table of open-ended metrics only (the resilience and self-consistency spreads) in the view."""
    return table if metrics is None else table.filter(pl.col("metric").is_in(list(metrics)))


def without_anchor_extra(
    correlations: pl.DataFrame, metrics: tuple[str, ...] | None, anchor: str | None
) -> pl.DataFrame:
    """The correlation rows of the view: the anchor's Relaxed Perplexity (kept for figure 17) leaves the others,
    figure 1's task rows included (their mean over a task's benchmarks would hold it)."""
    if metrics is None or anchor is None:
        return correlations
    relaxed = (
        (pl.col("x") == RELAXED_PERPLEXITY)
        | (pl.col("y") == RELAXED_PERPLEXITY)
        | (pl.col("metric") == RELAXED_PERPLEXITY)
    ).fill_null(False)
    of_anchor = ((pl.col("benchmark") == anchor) | pl.col("benchmark").str.starts_with(TASK_ROW)).fill_null(False)
    drop = pl.col("analysis").is_in(NAMED_METRIC_ANALYSES) & of_anchor & relaxed
    return correlations.filter(~drop)


def paper_clusters(metrics: list[str]) -> list[tuple[str, list[str]]]:
    """Section 3.3's three clusters over the metrics shown: perplexity; n-gram + semantic; the LLM judge."""
    from careval.metrics.registry import metric_category

    groups = {"perplexity": ("perplexity",), "n-gram + semantic": ("n-gram", "semantic"), "llm-judge": ("llm-judge",)}
    found = [(name, [m for m in metrics if metric_category(m) in categories]) for name, categories in groups.items()]
    return [(name, members) for name, members in found if members]
