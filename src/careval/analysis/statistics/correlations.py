"""Correlations across models (MCQA vs other tasks, metric x metric, benchmark x benchmark, MCQA vs Elo), each with a bootstrap interval."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.statistics.bootstrap import Resampled, correlation_interval
from careval.analysis.statistics.exact import correlation_test
from careval.analysis.tables.paper_tables import PAPER_TASKS, task_row
from careval.metrics.registry import higher_is_better, metric_spec
from careval.schemas import CORRELATION_SCHEMA, SET_CORRELATION_SCHEMA

ELO = ("chatbot_arena", "elo")
Key = tuple[str, str]


def direction(key: Key) -> int:
    """+1 where a higher value is better (the metric registry; Elo too), -1 where lower is better (perplexities)."""
    return 1 if key == ELO or higher_is_better(key[1]) else -1


def correlate(x: list[float | None], y: list[float | None], method: str) -> tuple[float, float, str | None]:
    """Pearson, Spearman or Kendall over the models that have both values: (r, p, the p-value's method), the p exact
    below exact.EXACT_BELOW models; NaN (and None) when undefined (n < 3 or constant)."""
    nan = float("nan")
    return correlation_test([nan if v is None else v for v in x], [nan if v is None else v for v in y], method)


@dataclass
class Scores:
    """Per-model values of every benchmark x metric (the summary), the bootstrap resamples, and fixed extras (Elo)."""

    summary: pl.DataFrame
    resampled: Resampled | None = None
    confidence: float = 0.95
    fixed: dict[Key, dict[str, float]] = field(default_factory=dict)
    # values computed from the summary's (figure 1's task means), whose resamples `resampled` holds: not `fixed`
    derived: dict[Key, dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.models = self.resampled.models if self.resampled else sorted(self.summary["model"].unique().to_list())
        self.values: dict[Key, dict[str, float]] = {}
        for model, benchmark, metric, value in self.summary.select("model", "benchmark", "metric", "value").iter_rows():
            self.values.setdefault((benchmark, metric), {})[model] = value
        self.values.update(self.derived)
        self.values.update(self.fixed)

    def vector(self, key: Key) -> list[float | None]:
        return [self.values.get(key, {}).get(model) for model in self.models]

    def pair(
        self,
        analysis: str,
        x: Key,
        y: Key,
        method: str,
        x_label: str,
        y_label: str,
        benchmark: str | None = None,
        metric: str | None = None,
    ) -> dict:
        xs, ys = self.vector(x), self.vector(y)
        r, p, p_method = correlate(xs, ys, method)
        low = high = float("nan")
        if self.resampled is not None and not math.isnan(r):
            fixed = {key: np.array([np.nan if v is None else v for v in self.vector(key)], float) for key in self.fixed}
            low, high = correlation_interval(self.resampled, x, y, method, self.confidence, fixed)
        n = sum(1 for a, b in zip(xs, ys) if a is not None and b is not None and math.isfinite(a) and math.isfinite(b))
        # r keeps the raw direction (what the figures draw); agreement > 0: both order the models alike
        return {
            "analysis": analysis,
            "benchmark": benchmark,
            "metric": metric,
            "x": x_label,
            "y": y_label,
            "method": method,
            "r": r,
            "p_value": p,
            "p_method": p_method,
            "ci_low": low,
            "ci_high": high,
            "n_models": n,
            "agreement": r * direction(x) * direction(y),
        }


def _as_scores(summary_or_scores) -> Scores:
    return summary_or_scores if isinstance(summary_or_scores, Scores) else Scores(summary_or_scores)


def _metrics_of(summary: pl.DataFrame, benchmark: str) -> list[str]:
    return sorted(summary.filter(pl.col("benchmark") == benchmark)["metric"].unique().to_list())


def _benchmarks_of_task(summary: pl.DataFrame, task_filter) -> list[str]:
    rows = summary.filter(task_filter & (pl.col("benchmark") != MCQA_AVERAGE))
    return sorted(rows["benchmark"].unique().to_list())


def mcqa_vs_open(
    summary, methods: list[str], mcqa_metric: str = "acc", paper_tasks: dict[str, str] | None = None
) -> pl.DataFrame:
    """Figure 1: the MCQA weighted-average accuracy against every metric of every other (non-MCQA) benchmark and,
    given each benchmark's paper task (`paper_tasks`), of every task's mean over its benchmarks (with_task_means)."""
    scores = _as_scores(summary)
    cells = [
        (benchmark, metric)
        for benchmark in _benchmarks_of_task(scores.summary, pl.col("task") != "mcqa")
        for metric in _metrics_of(scores.summary, benchmark)
    ]
    if paper_tasks:
        scores, task_cells = with_task_means(scores, paper_tasks)
        cells += task_cells
    return _one_against_many(scores, "mcqa_vs_open", (MCQA_AVERAGE, mcqa_metric), f"mcqa_{mcqa_metric}", cells, methods)


def _task_mean(stack: np.ndarray, geometric: bool) -> np.ndarray:
    """The mean over axis 0 (a task's benchmarks), geometric or arithmetic; NaN wherever one benchmark's is missing."""
    complete = np.isfinite(stack).all(0)
    safe = np.where(complete, stack, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.exp(np.log(safe).mean(0)) if geometric else safe.mean(0)
    return np.where(complete, mean, np.nan)


def with_task_means(scores: Scores, paper_tasks: dict[str, str]) -> tuple[Scores, list[Key]]:
    """Figure 1's task rows: the paper reads figure 1 by task ("only clinical note-taking correlates positively with
    MCQA"), so each task of Table 1 gets one score per metric to correlate with the MCQA average, as its benchmarks
    get theirs. A model's task score is the mean of its values on the task's non-MCQA benchmarks scored with the
    metric, every benchmark weighing the same (a large benchmark does not speak for its task), geometric where the
    registry combines the metric's samples so (perplexities, whose scale differs by benchmark); a model lacking one
    of them has none. The interval takes the same mean on every bootstrap resample (each benchmark resampled on its
    own), so the task rows are correlations with intervals and p-values as every other row is, not averages of
    correlations. Returns the scores with these values under ("task:<paper task>", metric), and their keys in
    Table 1's order of tasks."""
    members: dict[Key, list[str]] = {}
    for benchmark in _benchmarks_of_task(scores.summary, pl.col("task") != "mcqa"):
        task = paper_tasks.get(benchmark)
        if task is None:  # no task of the paper's Table 1
            continue
        for metric in _metrics_of(scores.summary, benchmark):
            members.setdefault((task_row(task), metric), []).append(benchmark)
    order = [task_row(task) for task in PAPER_TASKS]
    keys = sorted(members, key=lambda key: (order.index(key[0]), key[1]))
    derived: dict[Key, dict[str, float]] = {}
    resampled = dict(scores.resampled.scores) if scores.resampled is not None else None
    for key in keys:
        metric, names = key[1], members[key]
        geometric = metric_spec(metric).average == "geometric"
        vectors = np.array([[np.nan if v is None else v for v in scores.vector((b, metric))] for b in names], float)
        derived[key] = dict(zip(scores.models, _task_mean(vectors, geometric).tolist()))
        if resampled is not None:
            parts = [resampled.get((b, metric)) for b in names]
            arrays = [part for part in parts if part is not None]
            if len(arrays) == len(parts):  # a corpus-level metric has no resamples: no interval
                resampled[key] = _task_mean(np.stack(arrays), geometric)
    boot = scores.resampled
    with_means = Scores(
        scores.summary,
        None if boot is None or resampled is None else Resampled(boot.models, resampled, boot.n_resamples),
        scores.confidence,
        scores.fixed,
        {**scores.derived, **derived},
    )
    return with_means, keys


def _one_against_many(scores: Scores, analysis: str, x: Key, x_label: str, cells: list[Key], methods: list[str]):
    """One score `x` correlated with each (benchmark, metric) of `cells`, by every method."""
    rows = [
        scores.pair(analysis, x, (benchmark, metric), method, x_label, metric, benchmark=benchmark)
        for benchmark, metric in cells
        for method in methods
    ]
    return pl.DataFrame(rows, schema=CORRELATION_SCHEMA)


def _matrix_rows(
    scores: Scores,
    analysis: str,
    keys: list[Key],
    labels: list[str],
    methods: list[str],
    benchmark: str | None = None,
    metric: str | None = None,
) -> list[dict]:
    """Every ordered pair of `keys` by every method. A correlation, its p-value and its bootstrap interval do not
    depend on which score is x, so each unordered pair is computed once and its mirror is that row with x and y
    swapped: half the work, where the exact p over 9 models is all 9! pairings (~0.1 s a pair and method)."""
    rows = []
    for method in methods:
        computed: dict[tuple[int, int], dict] = {}
        for a, (x, x_label) in enumerate(zip(keys, labels)):
            for b, (y, y_label) in enumerate(zip(keys, labels)):
                if b < a:
                    rows.append({**computed[b, a], "x": x_label, "y": y_label})
                    continue
                computed[a, b] = scores.pair(
                    analysis, x, y, method, x_label, y_label, benchmark=benchmark, metric=metric
                )
                rows.append(computed[a, b])
    return rows


def metric_matrices(summary, methods: list[str]) -> pl.DataFrame:
    """Figure 10: metric x metric on each open-ended benchmark."""
    scores = _as_scores(summary)
    rows = []
    for benchmark in _benchmarks_of_task(scores.summary, pl.col("task") == "open"):
        names = _metrics_of(scores.summary, benchmark)
        rows += _matrix_rows(
            scores, "metric_x_metric", [(benchmark, m) for m in names], names, methods, benchmark=benchmark
        )
    return pl.DataFrame(rows, schema=CORRELATION_SCHEMA)


def benchmark_matrices(summary, methods: list[str]) -> pl.DataFrame:
    """Figures 11-12: for each metric, open-ended benchmark x benchmark (metrics found on at least two benchmarks)."""
    scores = _as_scores(summary)
    benchmarks = _benchmarks_of_task(scores.summary, pl.col("task") == "open")
    per_metric: dict[str, list[str]] = {}
    for benchmark in benchmarks:
        for metric in _metrics_of(scores.summary, benchmark):
            per_metric.setdefault(metric, []).append(benchmark)
    rows = []
    for metric, names in sorted(per_metric.items()):
        if len(names) >= 2:
            rows += _matrix_rows(
                scores, "benchmark_x_benchmark", [(b, metric) for b in names], names, methods, metric=metric
            )
    return pl.DataFrame(rows, schema=CORRELATION_SCHEMA)


def elo_matrix(summary, methods: list[str], mcqa_metric: str = "acc") -> pl.DataFrame:
    """Figures 8-9: every MCQA benchmark, their weighted average and the Chatbot-Arena Elo, pairwise (models with an Elo)."""
    scores = _as_scores(summary)
    if ELO not in scores.values:
        return pl.DataFrame(schema=CORRELATION_SCHEMA)
    names = _benchmarks_of_task(scores.summary, pl.col("task") == "mcqa") + [MCQA_AVERAGE]
    keys = [(name, mcqa_metric) for name in names] + [ELO]
    labels = names + ["elo"]
    return pl.DataFrame(
        _matrix_rows(scores, "mcqa_vs_elo", keys, labels, methods, metric=mcqa_metric), schema=CORRELATION_SCHEMA
    )


RELAXED_PERPLEXITY = "relaxed_perplexity"


def relaxed_perplexity_vs_all(summary, methods: list[str], anchor: str) -> pl.DataFrame:
    """Figure 17: Relaxed Perplexity on the `anchor` benchmark (the paper: OLAPH) against every other benchmark x
    metric of the summary (MCQA, its weighted average, and the anchor's own other metrics included)."""
    scores = _as_scores(summary)
    x = (anchor, RELAXED_PERPLEXITY)
    cells = [
        (benchmark, metric)
        for benchmark in sorted(scores.summary["benchmark"].unique().to_list())
        for metric in _metrics_of(scores.summary, benchmark)
        if (benchmark, metric) != x
    ]
    return _one_against_many(scores, "relaxed_perplexity_vs_all", x, f"{anchor}_{RELAXED_PERPLEXITY}", cells, methods)


# The correlation analyses drawn per model set (the figure families of analysis.figure_sets).
SET_ANALYSES = {
    "mcqa_vs_open": mcqa_vs_open,
    "metric_x_metric": metric_matrices,
    "benchmark_x_benchmark": benchmark_matrices,
    "mcqa_vs_elo": elo_matrix,
}


def set_correlations(
    scores_of, sets_of, methods: list[str], anchor: str | None = None, paper_tasks: dict[str, str] | None = None
) -> pl.DataFrame:
    """Every analysis over each of its model sets in one long table (results/summary/correlations.parquet).

    scores_of(set name) -> Scores over exactly that set's models; sets_of(analysis) -> its set names;
    anchor: the benchmark of figure 17's Relaxed Perplexity (None: no figure 17); paper_tasks: each benchmark's
    paper task, for figure 1's task rows (None: none).
    """
    parts = [pl.DataFrame(schema=SET_CORRELATION_SCHEMA)]
    analyses = dict(SET_ANALYSES)
    analyses["mcqa_vs_open"] = lambda scores, methods: mcqa_vs_open(scores, methods, paper_tasks=paper_tasks)
    if anchor is not None:
        analyses["relaxed_perplexity_vs_all"] = lambda scores, methods: relaxed_perplexity_vs_all(
            scores, methods, anchor
        )
    for analysis, function in analyses.items():
        for name in sets_of(analysis):
            table = function(scores_of(name), methods)
            parts.append(table.select(pl.lit(name, pl.String).alias("model_set"), *table.columns))
    return pl.concat(parts)


def square(table: pl.DataFrame, column: str = "r") -> tuple[list[str], np.ndarray]:
    """A long matrix block (one analysis, scope and method) back into labels and a square array."""
    labels = list(dict.fromkeys(table["x"].to_list()))
    matrix = np.full((len(labels), len(labels)), np.nan)
    for x, y, value in table.select("x", "y", column).iter_rows():
        matrix[labels.index(x), labels.index(y)] = np.nan if value is None else value
    return labels, matrix
