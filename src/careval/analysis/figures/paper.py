"""The paper's analysis figures (scores, MCQA vs open-ended, metric and benchmark matrices, Elo, rankings,
resilience, self-consistency): one titled, labelled page each."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from careval.analysis.additions import addition_note, marked, marked_task, task_addition_note
from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.figures.heatmaps import (
    CI_NOTE,
    block_of,
    heatmap,
    joined_notes,
    lower_is_better_note,
    matrix_inches,
    squares,
)
from careval.analysis.figures.text_pages import bottom_note, empty_page, wrap_to
from careval.analysis.metric_view import paper_clusters
from careval.analysis.statistics.consistency import cv_excluded_metrics
from careval.analysis.statistics.spread import across_models
from careval.analysis.tables.paper_tables import PAPER_TASKS, task_row
from careval.metrics.registry import higher_is_better


def scores_figure(summary: pl.DataFrame, additions: tuple[str, ...] = ()):
    """An overview page: every model's headline numbers, so the correlations can be read against them."""
    table = summary.filter(pl.col("metric").is_in(["acc", "rougeL", "bleu", "bertscore_f1", "word_perplexity"]))
    label = {b: marked(b, additions) for b in table["benchmark"].unique().to_list()}
    label[MCQA_AVERAGE] = "MCQA avg"
    short = pl.col("benchmark").replace_strict(label, return_dtype=pl.String)
    wide = (
        table.with_columns(column=short + "\n" + pl.col("metric"))
        .pivot(on="column", index="model", values="value")
        .sort("model")
    )
    columns = wide.columns[1:]
    fig, ax = plt.subplots(figsize=(max(11, 1.3 * (len(columns) + 2)), 1.8 + 0.45 * wide.height))
    ax.axis("off")
    cells = [[row[0], *(f"{v:.3g}" if v is not None else "n/a" for v in row[1:])] for row in wide.iter_rows()]
    tab = ax.table(cellText=cells, colLabels=["model", *columns], loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(6)
    tab.scale(1, 2.4)
    tab.auto_set_column_width(list(range(len(columns) + 1)))
    ax.set_title("Scores per model (results/summary/scores.parquet)", fontsize=11)
    shown = table["benchmark"].unique().to_list()
    bottom_note(
        fig, joined_notes(lower_is_better_note(table["metric"].unique().to_list()), addition_note(shown, additions))
    )
    return fig


def _grid_figure(
    block: pl.DataFrame,
    methods: list[str],
    title: str,
    note: str,
    empty: str,
    rows: list[str] | None = None,
    labels: list[str] | None = None,
    split: int | None = None,
):
    """One benchmark x metric heatmap per method: the coefficient of one fixed score against each of them.
    `rows`: the benchmark column's values in their order (default: sorted), shown as `labels`; a line is drawn
    above row `split` (figure 1's task rows below its benchmarks)."""
    benchmarks = rows if rows is not None else sorted(block["benchmark"].unique().to_list())
    labels = labels if labels is not None else benchmarks
    metrics = sorted(block["y"].unique().to_list())
    if not benchmarks:
        return empty_page(title, empty)
    width = max(12.0, 0.62 * len(metrics) + 4.0)
    fig, axes = plt.subplots(
        len(methods), 1, figsize=(width, 2.6 + (1.9 + 0.9 * len(benchmarks)) * len(methods)), squeeze=False
    )
    for ax, method in zip(axes[:, 0], methods):
        grids = {c: np.full((len(benchmarks), len(metrics)), np.nan) for c in ("r", "ci_low", "ci_high", "p_value")}
        for row in block.filter(pl.col("method") == method).iter_rows(named=True):
            for column, grid in grids.items():
                value = row[column]
                grid[benchmarks.index(row["benchmark"]), metrics.index(row["y"])] = np.nan if value is None else value
        heatmap(
            ax,
            grids["r"],
            labels,
            metrics,
            f"{method.capitalize()} correlation (x: metric, y: benchmark)",
            grids["ci_low"],
            grids["ci_high"],
            grids["p_value"],
        )
        if split:
            ax.axhline(split - 0.5, color="black", linewidth=1.5)
    fig.suptitle(title, fontsize=11)
    fig.text(0.01, 0.005, joined_notes(note, lower_is_better_note(metrics), CI_NOTE), fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    return fig


TASK_NOTE = (
    "Rows below the line: each paper task (Table 1), a model's mean over the task's benchmarks scored with the "
    "metric (each benchmark weighing the same; geometric for perplexities), correlated with the MCQA average as a "
    "benchmark is, its interval from the same mean on every resample."
)


def mcqa_vs_open_figure(
    table: pl.DataFrame,
    methods: list[str],
    models: str,
    paper_tasks: dict[str, str] | None = None,
    additions: tuple[str, ...] = (),
):
    """Figure 1 over one model set; `models` says which ("9 models of set 'small'"). Its benchmarks, then the paper
    tasks' rows (careval.analysis.statistics.correlations.with_task_means), whose members the note lists."""
    block = table.filter(pl.col("analysis") == "mcqa_vs_open")
    present = set(block["benchmark"].unique().to_list())
    tasks = [task for task in PAPER_TASKS if task_row(task) in present]
    order = list(PAPER_TASKS)  # the benchmarks by task, as the task rows below them
    paper_tasks = paper_tasks or {}
    benchmarks = sorted(
        present - {task_row(task) for task in tasks},
        key=lambda b: (order.index(paper_tasks[b]) if b in paper_tasks else len(order), b),
    )
    of_task = {task: [b for b in benchmarks if paper_tasks.get(b) == task] for task in tasks}
    members = {task: ", ".join(marked(b, additions) for b in of_task[task]) for task in tasks}
    note = TASK_NOTE + " " + "; ".join(f"{PAPER_TASKS[t]}: {members[t]}" for t in tasks) + "." if tasks else ""
    in_tasks = [b for task in tasks for b in of_task[task]]
    return _grid_figure(
        block,
        methods,
        f"MCQA weighted-average accuracy vs every other benchmark x metric, and per task ({models})",
        joined_notes(note, addition_note(benchmarks, additions), task_addition_note(in_tasks, additions)),
        "no non-MCQA benchmark in the config",
        rows=benchmarks + [task_row(task) for task in tasks],
        labels=[marked(b, additions) for b in benchmarks]
        + [marked_task(f"task: {PAPER_TASKS[task]}", of_task[task], additions) for task in tasks],
        split=len(benchmarks) if tasks else None,
    )


def relaxed_perplexity_figure(
    table: pl.DataFrame, methods: list[str], models: str, anchor: str, additions: tuple[str, ...] = ()
):
    """Figure 17: Relaxed Perplexity on the anchor benchmark against every other benchmark x metric."""
    block = table.filter(pl.col("analysis") == "relaxed_perplexity_vs_all")
    benchmarks = sorted(block["benchmark"].unique().to_list())
    return _grid_figure(
        block,
        methods,
        f"{marked(anchor, additions)} Relaxed Perplexity vs every other benchmark x metric ({models})",
        joined_notes(
            f"Relaxed Perplexity (lower is better) of {anchor}, scored against its benchmark's "
            "target (OLAPH: the Must_have statements; other benchmarks: the full reference).",
            addition_note([anchor, *benchmarks], additions),
        ),
        f"no Relaxed Perplexity on {anchor}",
        rows=benchmarks,
        labels=[marked(b, additions) for b in benchmarks],
    )


def metric_matrix_figure(
    table: pl.DataFrame,
    clusters: pl.DataFrame,
    benchmark: str,
    methods: list[str],
    models: str,
    cut: str,
    additions: tuple[str, ...] = (),
):
    """Figure 10: metric x metric on one benchmark, ordered and annotated by its clusters (careval.analysis.report)."""
    side = matrix_inches(table.filter(pl.col("benchmark") == benchmark)["x"].n_unique())
    fig, axes = plt.subplots(1, len(methods), figsize=((side + 2) * len(methods), side + 1.5), squeeze=False)
    notes = []
    labels: list[str] = []
    for ax, method in zip(axes[0], methods):
        block = block_of(table, analysis="metric_x_metric", benchmark=benchmark, method=method)
        mine = block_of(clusters, benchmark=benchmark, method=method)
        groups = mine.group_by("cluster", maintain_order=True).agg("metric").rows()
        order = [m for _, members in groups for m in members]
        labels, r, low, high, p = squares(block, order)
        heatmap(ax, r, labels, labels, f"{method.capitalize()} (metric vs metric, ordered by cluster)", low, high, p)
        notes.append(f"{method}: " + "; ".join(f"[{name}] {', '.join(members)}" for name, members in groups))
    paper = "; ".join(f"[{name}] {', '.join(members)}" for name, members in paper_clusters(labels))
    fig.suptitle(f"Metric x metric correlation on {marked(benchmark, additions)} across {models}", fontsize=11)
    fig.text(
        0.01,
        0.01,
        "\n".join(
            [
                f"Clusters found (average linkage on 1 - r, {cut}; named by their members' categories):",
                *notes,
                f"The paper's three (section 3.3): {paper}",
                lower_is_better_note(labels),
                joined_notes(CI_NOTE, addition_note([benchmark], additions)),
            ]
        ),
        fontsize=6,
        wrap=True,
    )
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return fig


def benchmark_matrix_figure(table: pl.DataFrame, method: str, models: str, additions: tuple[str, ...] = ()):
    """Figures 11-12: one small benchmark x benchmark matrix per metric."""
    block = block_of(table, analysis="benchmark_x_benchmark", method=method)
    metrics = sorted(block["metric"].unique().to_list())
    title = f"Benchmark x benchmark correlation per metric ({method}, {models})"
    if not metrics:
        return empty_page(title, "needs at least two open-ended benchmarks scored with the same metric")
    columns = min(3, len(metrics))
    rows = math.ceil(len(metrics) / columns)
    side = matrix_inches(block["x"].n_unique())
    fig, axes = plt.subplots(rows, columns, figsize=((side + 1.5) * columns, (side + 0.8) * rows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        labels, r, low, high, p = squares(block_of(block, metric=metric))
        names = [marked(label, additions) for label in labels]
        heatmap(ax, r, names, names, metric, low, high, p)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.text(0.01, 0.005, joined_notes(CI_NOTE, addition_note(block["x"].unique().to_list(), additions)), fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 0.96))
    return fig


def elo_figure(table: pl.DataFrame, methods: list[str], elo_path: str, set_name: str, additions: tuple[str, ...] = ()):
    block = table.filter(pl.col("analysis") == "mcqa_vs_elo")
    fig, axes = plt.subplots(1, len(methods), figsize=(7.5 * len(methods), 6.5), squeeze=False)
    for ax, method in zip(axes[0], methods):
        labels, r, low, high, p = squares(block_of(block, method=method))
        names = [marked(label, additions) for label in labels]
        heatmap(ax, r, names, names, f"{method.capitalize()}", low, high, p)
    n = int(block["n_models"].max() or 0) if block.height else 0
    fig.suptitle(
        f"MCQA benchmarks (accuracy) vs Chatbot-Arena Elo ({n} models of set '{set_name}' with an Elo)", fontsize=11
    )
    fig.text(
        0.01,
        0.005,
        joined_notes(
            f"Elo from {elo_path}; Elo is not resampled (it has no samples).",
            CI_NOTE,
            addition_note(block["x"].unique().to_list(), additions),
        ),
        fontsize=7,
    )
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    return fig


def rankings_figure(rankings: pl.DataFrame, benchmark: str, set_name: str, additions: tuple[str, ...] = ()):
    """Figure 18: each model's rank under every metric (1 = best)."""
    block = rankings.filter(pl.col("benchmark") == benchmark)
    metrics = sorted(block["metric"].unique().to_list())
    models = sorted(block["model"].unique().to_list())
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(metrics) + 3), 5))
    for model in models:
        rows = block.filter(pl.col("model") == model)
        ranks = dict(zip(rows["metric"], rows["rank"]))
        ax.plot(
            range(len(metrics)),
            [ranks.get(m) if ranks.get(m) is not None else np.nan for m in metrics],
            marker="o",
            label=model,
        )
    ax.set_xticks(range(len(metrics)), metrics, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("rank (1 = best)")
    ax.set_xlabel("metric")
    ax.invert_yaxis()
    if models:
        ax.set_yticks(range(1, len(models) + 1))
    # beside the axes: every rank row holds a line, so no place inside is free of data
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    lower = [m for m in metrics if not higher_is_better(m)]
    ax.set_title(
        wrap_to(
            f"Model rankings per metric on {marked(benchmark, additions)}, model set '{set_name}' (1 = best; lower "
            f"value ranks first for: {', '.join(lower) or 'none'})",
            fig.get_figwidth() - 2.0,  # the legend beside the axes takes the rest
            9,
        ),
        fontsize=9,
    )
    note = addition_note([benchmark], additions)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7)
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    return fig


def _distributions(ax, frame: pl.DataFrame, column: str, title: str, ylabel: str) -> None:
    metrics = sorted(frame["metric"].unique().to_list())
    data = [frame.filter(pl.col("metric") == m)[column].drop_nulls().to_numpy() for m in metrics]
    keep = [(m, d) for m, d in zip(metrics, data) if d.size]
    if keep:
        ax.boxplot([d for _, d in keep], showmeans=True)
        ax.set_xticks(range(1, len(keep) + 1), [m for m, _ in keep], rotation=60, ha="right", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_xlabel("metric", fontsize=8)


def sample_counts_note(block: pl.DataFrame, unit: str = "samples") -> str:
    """Where the metrics of one figure rest on different numbers of samples (a judge grades fewer than the text
    metrics score), how many each; else ""."""
    if block.is_empty():
        return ""
    counts = block.group_by("metric").agg(pl.col("id").n_unique().alias("n")).sort("metric")
    if counts["n"].n_unique() < 2:
        return ""
    by_n: dict[int, list[str]] = {}
    for metric, n in counts.iter_rows():
        by_n.setdefault(n, []).append(metric)
    parts = "; ".join(f"{n}: {', '.join(metrics)}" for n, metrics in sorted(by_n.items()))
    return f"The metrics rest on different numbers of {unit} ({unit} per metric: {parts})."


# the y axis of figures 13-15 and 2 per scaling: what the number is (a variance over max - min of a column whose
# smallest variance is above 0 can exceed 1, so the axis names the division instead of calling it a 0-1 scale)
AXIS = {
    "scaled_variance": "variance / (max - min of the metric's variances)",
    "scaled_variance_value_range": "variance / (max - min of the metric's values)",
}

# analysis.resilience.scaling -> the spread column figures 13-15 draw, and how it was scaled
SCALINGS = {
    "variance_range": (
        "scaled_variance",
        "Variance (ddof 0) divided by max - min of the metric's variances over all models and samples of the "
        "benchmark (paper C.1: 'the max interval in each column'): above 1 where a metric's smallest variance is "
        "above 0.",
    ),
    "value_range": (
        "scaled_variance_value_range",
        "Variance (ddof 0) divided by the metric's observed max - min value over all models, samples and "
        "rephrasings (scaling value_range; keeps the metric's unit).",
    ),
}


def resilience_figure(
    spread: pl.DataFrame, benchmark: str, k: int, scaling: str = "variance_range", additions: tuple[str, ...] = ()
):
    """Figure 13 (across models) and figures 14-15 (one panel per model)."""
    column, scaled_how = SCALINGS[scaling]
    block = spread.filter(pl.col("benchmark") == benchmark)
    models = sorted(block["model"].unique().to_list())
    fig, axes = plt.subplots(
        1 + math.ceil(len(models) / 2), 2, figsize=(12, 4.2 * (1 + math.ceil(len(models) / 2))), squeeze=False
    )
    grid = list(axes.flat)
    axes[0, 1].axis("off")
    _distributions(
        grid[0],
        across_models(block, column),
        column,
        "Averaged across models (paper fig. 13)",
        f"mean per sample of\n{AXIS[column]}",
    )
    for ax, model in zip(grid[2:], models):
        _distributions(ax, block.filter(pl.col("model") == model), column, model, f"per sample:\n{AXIS[column]}")
    for ax in grid[2 + len(models) :]:
        ax.axis("off")
    fig.suptitle(
        f"Resilience to rephrasing on {marked(benchmark, additions)}: variance over {k} rephrasings per sample",
        fontsize=11,
    )
    bottom = bottom_note(
        fig,
        joined_notes(
            scaled_how,
            "Closer to 0 = more resilient. Box: quartiles; triangle: mean.",
            sample_counts_note(block.filter(pl.col(column).is_not_null())),
            addition_note([benchmark], additions),
        ),
    )
    fig.tight_layout(rect=(0, bottom, 1, 0.96))
    return fig


def consistency_figure(spread: pl.DataFrame, benchmark: str, r: int, cv: bool, additions: tuple[str, ...] = ()):
    """Figure 2 (the per-prompt variance, scaled as figure 13's) or figure 16 (coefficient of variation), averaged
    across models.

    C.2 averages the plain variances, but those of a 1-5 judge grade, an unbounded BLEURT and a 0-1 ROUGE on one
    axis compare units, not consistency. Figure 2 takes the one scaling the paper gives its sister figure 13 (C.1:
    each metric's variances divided by their max - min over every model and prompt of the benchmark): a ratio of
    variances, without a unit, the same for a metric on 0-1 and on 0-100, and 0 where the answers agree; the plain
    variances stay in consistency.parquet (`variance`). The CV of figure 16 is a ratio without a unit already."""
    block = spread.filter(pl.col("benchmark") == benchmark)
    column = "cv" if cv else "scaled_variance"
    excluded = cv_excluded_metrics(block) if cv else []
    fig, ax = plt.subplots(figsize=(10, 5.5))
    _distributions(
        ax,
        across_models(block.filter(~pl.col("metric").is_in(excluded)), column),
        column,
        "",
        "mean coefficient of variation per prompt" if cv else f"mean per prompt of\n{AXIS[column]}",
    )
    n_models = block["model"].n_unique()
    what = "coefficient of variation (std / mean, ddof 0)" if cv else "variance (ddof 0) scaled as figure 13's"
    fig.suptitle(
        f"Self-consistency on {marked(benchmark, additions)}: {what} over {r} samples per prompt, averaged across "
        f"{n_models} models",
        fontsize=10,
    )
    note = "Closer to 0 = more self-consistent. Perplexity depends on the reference only: it must be exactly 0."
    if cv:
        note += f" Left out (can be negative, as the paper leaves out BLEURT): {', '.join(excluded) or 'none'}."
        undefined = block.filter(pl.col("cv").is_null() & ~pl.col("metric").is_in(excluded)).height
        note += f" {undefined} model x prompt x metric CVs undefined (mean 0) are not shown."
    else:
        note = joined_notes(SCALINGS["variance_range"][1], note, "Unscaled variances: consistency.parquet, `variance`.")
    counts = sample_counts_note(block.filter(pl.col(column).is_not_null()), "prompts")
    bottom = bottom_note(fig, joined_notes(note, counts, addition_note([benchmark], additions)))
    fig.tight_layout(rect=(0, bottom, 1, 0.95))
    return fig
