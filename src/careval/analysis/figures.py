"""The paper's analysis figures: one titled, labelled page per figure in results/correlations.pdf, and the same as PNGs."""

from __future__ import annotations

import errno
import math
import multiprocessing
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.backends.backend_pdf import PdfPages

from careval.analysis import careqa_figures, comparison_figures, jury_figures, study_figures
from careval.analysis.additions import addition_note, marked
from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.consistency import cv_excluded_metrics
from careval.analysis.correlations import square
from careval.analysis.empty_page import empty_page, text_page
from careval.analysis.metric_view import paper_clusters
from careval.analysis.paper_table_files import table_figure
from careval.analysis.paper_tables import PAPER_TASKS, task_row
from careval.analysis.plan import FigureSpec, ReportJob
from careval.analysis.report_tables import AnalysisTables
from careval.analysis.spread import across_models
from careval.metrics.registry import higher_is_better

CMAP = "RdBu_r"


def _cell(r: float, low: float | None, high: float | None, p: float | None, lines: int = 3) -> str:
    """A heatmap cell's text: r, then its interval, then its p-value, as many of these lines as fit (`lines`)."""
    if r is None or np.isnan(r):
        return "n/a"
    text = f"{r:.2f}"
    if lines >= 2 and low is not None and not np.isnan(low):
        text += f"\n[{low:.2f},{high:.2f}]"
    if lines >= 3 and p is not None and not np.isnan(p):
        text += f"\np={p:.2g}"
    return text


# Cell text is sized to its cell (points): a line needs ~1.3 x the font's height and each character ~0.6 x its
# size; below MIN_FONT a line is dropped (p first, then the interval) rather than drawn over its neighbours.
MIN_FONT, MAX_FONT = 5.0, 8.0
LINE_CHARS = {1: 5, 2: 12, 3: 12}  # "-0.53", "[-1.00,1.00]", "p=0.045"


def cell_layout(ax, rows: int, cols: int) -> tuple[int, float]:
    """How many lines of text (3, 2, 1 or 0) fit a cell of this heatmap, and at what font size."""
    fig = ax.figure
    box = ax.get_position()
    width = box.width * fig.get_figwidth() * 72 / max(cols, 1)
    height = box.height * fig.get_figheight() * 72 / max(rows, 1)
    for lines in (3, 2, 1):
        size = min(MAX_FONT, height / (1.3 * lines), width / (0.6 * LINE_CHARS[lines]))
        if size >= MIN_FONT:
            return lines, size
    return 0, MIN_FONT


def matrix_inches(n: int) -> float:
    """The side of an n x n heatmap that keeps each cell's r, interval and p-value legible (>= 5 pt)."""
    return max(3.5, 0.62 * n + 2.0)


def _heatmap(
    ax,
    matrix: np.ndarray,
    rows: list[str],
    cols: list[str],
    title: str,
    low: np.ndarray | None = None,
    high: np.ndarray | None = None,
    p: np.ndarray | None = None,
) -> None:
    image = ax.imshow(matrix, cmap=CMAP, vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_title(title, fontsize=9)
    lines, size = cell_layout(ax, *matrix.shape)
    square = rows == cols  # a matrix of the same labels both ways: its diagonal (r = 1) has no p-value
    for i in range(matrix.shape[0] if lines else 0):
        for j in range(matrix.shape[1]):
            value = matrix[i, j]
            text = _cell(
                value,
                None if low is None else low[i, j],
                None if high is None else high[i, j],
                None if p is None or (square and i == j) else p[i, j],
                lines,
            )
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=size,
                color="white" if not np.isnan(value) and abs(value) > 0.6 else "black",
            )
    plt.colorbar(image, ax=ax, fraction=0.03, label="correlation coefficient")


def _block(table: pl.DataFrame, **where) -> pl.DataFrame:
    for column, value in where.items():
        table = table.filter(pl.col(column).is_null() if value is None else pl.col(column) == value)
    return table


def _squares(block: pl.DataFrame, order: list[str] | None = None):
    labels, r = square(block, "r")
    _, low = square(block, "ci_low")
    _, high = square(block, "ci_high")
    _, p = square(block, "p_value")
    if order:
        index = [labels.index(name) for name in order]
        labels, r, low, high, p = order, *(m[np.ix_(index, index)] for m in (r, low, high, p))
    return labels, r, low, high, p


CI_NOTE = "Cells: r, [bootstrap 95% CI over resampled benchmark samples], p-value (across models)."


def lower_is_better_note(metrics) -> str:
    """Which of the figure's metrics are lower-is-better (the metric registry), so a reader can read a sign."""
    lower = sorted({m for m in metrics if not higher_is_better(m)})
    if not lower:
        return "Every metric shown is higher-is-better."
    return (
        f"Lower is better: {', '.join(lower)}; r keeps the raw direction, so a negative r between one of these "
        "and a higher-is-better score means agreement (column `agreement` of correlations.parquet)."
    )


def _notes(*parts: str) -> str:
    """A page's note from its parts, the empty ones left out."""
    return " ".join(part for part in parts if part)


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
    fig.text(
        0.01,
        0.01,
        _notes(lower_is_better_note(table["metric"].unique().to_list()), addition_note(shown, additions)),
        fontsize=7,
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
        _heatmap(
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
    fig.text(0.01, 0.005, _notes(note, lower_is_better_note(metrics), CI_NOTE), fontsize=7, wrap=True)
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
    tasks' rows (careval.analysis.correlations.with_task_means), whose members the note lists."""
    block = table.filter(pl.col("analysis") == "mcqa_vs_open")
    present = set(block["benchmark"].unique().to_list())
    tasks = [task for task in PAPER_TASKS if task_row(task) in present]
    order = list(PAPER_TASKS)  # the benchmarks by task, as the task rows below them
    paper_tasks = paper_tasks or {}
    benchmarks = sorted(
        present - {task_row(task) for task in tasks},
        key=lambda b: (order.index(paper_tasks[b]) if b in paper_tasks else len(order), b),
    )
    members = {
        task: ", ".join(marked(b, additions) for b in benchmarks if paper_tasks.get(b) == task) for task in tasks
    }
    note = TASK_NOTE + " " + "; ".join(f"{PAPER_TASKS[t]}: {members[t]}" for t in tasks) + "." if tasks else ""
    return _grid_figure(
        block,
        methods,
        f"MCQA weighted-average accuracy vs every other benchmark x metric, and per task ({models})",
        _notes(note, addition_note(benchmarks, additions)),
        "no non-MCQA benchmark in the config",
        rows=benchmarks + [task_row(task) for task in tasks],
        labels=[marked(b, additions) for b in benchmarks] + [f"task: {PAPER_TASKS[task]}" for task in tasks],
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
        _notes(
            f"Relaxed Perplexity (lower is better) of {anchor}, scored against the target named in the "
            "README (OLAPH: the Must_have statements; other benchmarks: the full reference).",
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
        block = _block(table, analysis="metric_x_metric", benchmark=benchmark, method=method)
        mine = _block(clusters, benchmark=benchmark, method=method)
        groups = mine.group_by("cluster", maintain_order=True).agg("metric").rows()
        order = [m for _, members in groups for m in members]
        labels, r, low, high, p = _squares(block, order)
        _heatmap(ax, r, labels, labels, f"{method.capitalize()} (metric vs metric, ordered by cluster)", low, high, p)
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
                _notes(CI_NOTE, addition_note([benchmark], additions)),
            ]
        ),
        fontsize=6,
        wrap=True,
    )
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return fig


def benchmark_matrix_figure(table: pl.DataFrame, method: str, models: str, additions: tuple[str, ...] = ()):
    """Figures 11-12: one small benchmark x benchmark matrix per metric."""
    block = _block(table, analysis="benchmark_x_benchmark", method=method)
    metrics = sorted(block["metric"].unique().to_list())
    title = f"Benchmark x benchmark correlation per metric ({method}, {models})"
    if not metrics:
        return empty_page(title, "needs at least two open-ended benchmarks scored with the same metric")
    columns = min(3, len(metrics))
    rows = math.ceil(len(metrics) / columns)
    side = matrix_inches(block["x"].n_unique())
    fig, axes = plt.subplots(rows, columns, figsize=((side + 1.5) * columns, (side + 0.8) * rows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        labels, r, low, high, p = _squares(_block(block, metric=metric))
        names = [marked(label, additions) for label in labels]
        _heatmap(ax, r, names, names, metric, low, high, p)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.text(0.01, 0.005, _notes(CI_NOTE, addition_note(block["x"].unique().to_list(), additions)), fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 0.96))
    return fig


def elo_figure(table: pl.DataFrame, methods: list[str], elo_path: str, set_name: str, additions: tuple[str, ...] = ()):
    block = table.filter(pl.col("analysis") == "mcqa_vs_elo")
    fig, axes = plt.subplots(1, len(methods), figsize=(7.5 * len(methods), 6.5), squeeze=False)
    for ax, method in zip(axes[0], methods):
        labels, r, low, high, p = _squares(_block(block, method=method))
        names = [marked(label, additions) for label in labels]
        _heatmap(ax, r, names, names, f"{method.capitalize()}", low, high, p)
    n = int(block["n_models"].max() or 0) if block.height else 0
    fig.suptitle(
        f"MCQA benchmarks (accuracy) vs Chatbot-Arena Elo ({n} models of set '{set_name}' with an Elo)", fontsize=11
    )
    fig.text(
        0.01,
        0.005,
        _notes(
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
    ax.legend(fontsize=7, loc="best")
    lower = [m for m in metrics if not higher_is_better(m)]
    ax.set_title(
        f"Model rankings per metric on {marked(benchmark, additions)}, model set '{set_name}' (1 = best; lower value "
        f"ranks first for: {', '.join(lower) or 'none'})",
        fontsize=9,
        wrap=True,
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


# analysis.resilience.scaling -> the spread column figures 13-15 draw, and how it was scaled
SCALINGS = {
    "variance_range": (
        "scaled_variance",
        "Variance (ddof 0) divided by max - min of the metric's variances over all models and samples of the "
        "benchmark (paper C.1: 'the max interval in each column').",
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
        "mean scaled variance per sample",
    )
    for ax, model in zip(grid[2:], models):
        _distributions(ax, block.filter(pl.col("model") == model), column, model, "scaled variance per sample")
    for ax in grid[2 + len(models) :]:
        ax.axis("off")
    fig.suptitle(
        f"Resilience to rephrasing on {marked(benchmark, additions)}: variance over {k} rephrasings per sample",
        fontsize=11,
    )
    fig.text(
        0.01,
        0.005,
        _notes(
            scaled_how,
            "Closer to 0 = more resilient. Box: quartiles; triangle: mean.",
            addition_note([benchmark], additions),
        ),
        fontsize=7,
    )
    fig.tight_layout(rect=(0, 0.02, 1, 0.96))
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
        "mean coefficient of variation per prompt" if cv else "mean scaled variance per prompt",
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
        note = _notes(SCALINGS["variance_range"][1], note, "Unscaled variances: consistency.parquet, `variance`.")
    fig.text(0.01, 0.005, _notes(note, addition_note([benchmark], additions)), fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    return fig


def _set_block(tables: AnalysisTables, figure: FigureSpec) -> pl.DataFrame:
    """The correlations of the figure's analysis (its kind) over its model set."""
    return tables.correlations.filter((pl.col("analysis") == figure.kind) & (pl.col("model_set") == figure.model_set))


def _draw_metric_x_metric(tables: AnalysisTables, job: ReportJob, figure: FigureSpec):
    cut = (
        f"cut into at most {job.clusters} clusters"
        if job.clusters
        else f"cut at mean r >= {job.cluster_min_correlation}"
    )
    clusters = tables.clusters.filter(pl.col("model_set") == figure.model_set)
    who = tables.set_labels[figure.model_set]
    return metric_matrix_figure(
        _set_block(tables, figure), clusters, figure.benchmark, list(job.methods), who, cut, job.additions
    )


def _draw_rankings(tables: AnalysisTables, job: ReportJob, figure: FigureSpec):
    ranked = tables.rankings.filter(
        (pl.col("model_set") == figure.model_set) & (pl.col("benchmark") == figure.benchmark)
    ).drop("model_set")
    return rankings_figure(ranked, figure.benchmark, figure.model_set, job.additions)


# figure kind (FigureSpec.kind) -> its drawing: (tables, job, figure) -> a matplotlib figure
DRAW = {
    "run_notes": lambda tables, job, figure: text_page("About this run: what it does not make, and why", job.notes),
    "scores": lambda tables, job, figure: scores_figure(tables.summary, job.additions),
    "mcqa_vs_open": lambda tables, job, figure: mcqa_vs_open_figure(
        _set_block(tables, figure),
        list(job.methods),
        tables.set_labels[figure.model_set],
        job.paper_tasks,
        job.additions,
    ),
    "metric_x_metric": _draw_metric_x_metric,
    "benchmark_x_benchmark": lambda tables, job, figure: benchmark_matrix_figure(
        _set_block(tables, figure), figure.method, tables.set_labels[figure.model_set], job.additions
    ),
    "mcqa_vs_elo": lambda tables, job, figure: elo_figure(
        _set_block(tables, figure), list(job.methods), str(tables.elo_path), figure.model_set, job.additions
    ),
    "rankings": _draw_rankings,
    "relaxed_perplexity_vs_all": lambda tables, job, figure: relaxed_perplexity_figure(
        _set_block(tables, figure),
        list(job.methods),
        tables.set_labels[figure.model_set],
        job.relaxed_perplexity_anchor,
        job.additions,
    ),
    "resilience": lambda tables, job, figure: resilience_figure(
        tables.resilience, figure.benchmark, job.resilience_k, job.resilience_scaling, job.additions
    ),
    "consistency": lambda tables, job, figure: consistency_figure(
        tables.consistency, figure.benchmark, job.consistency_r, cv=False, additions=job.additions
    ),
    "consistency_cv": lambda tables, job, figure: consistency_figure(
        tables.consistency, figure.benchmark, job.consistency_r, cv=True, additions=job.additions
    ),
    "careqa_table4": lambda tables, job, figure: careqa_figures.table4_figure(
        tables.careqa["table4"], tables.careqa["table4_caption"]
    ),
    "careqa_categories": lambda tables, job, figure: careqa_figures.categories_figure(
        tables.careqa["categories"], figure.benchmark
    ),
    "careqa_review": lambda tables, job, figure: careqa_figures.review_figure(
        tables.careqa["review"], job.review_sheets
    ),
    "paper_table": lambda tables, job, figure: table_figure(
        tables.paper_tables[figure.name], figure.name, job.additions
    ),
    "comparisons": lambda tables, job, figure: comparison_figures.win_tie_loss_figure(
        _of_set(tables.comparisons, figure),
        job.model_sets[figure.model_set],
        figure.benchmark,
        figure.model_set,
        job.comparison_adjust,
    ),
    "comparison_groups": lambda tables, job, figure: comparison_figures.groups_figure(
        _of_set(tables.groups, figure),
        _of_set(tables.adjacent, figure),
        figure.benchmark,
        figure.model_set,
        job.comparison_adjust,
    ),
    "adjacent_pairs": lambda tables, job, figure: comparison_figures.adjacent_figure(
        _of_set(tables.adjacent, figure), figure.model_set, job.comparison_adjust
    ),
    "cost": lambda tables, job, figure: comparison_figures.cost_figure(
        tables.summary,
        tables.cost,
        job.cost["benchmark"],
        job.cost["metric"],
        job.cost["cost"],
        job.model_sets.get("all") or tuple(tables.summary["model"].unique().sort()),
        tables.request_cache,
    ),
    # a jury of judges and people's ratings (careval.analysis.jury_figures)
    "jury": lambda tables, job, figure: jury_figures.jury_figure(tables.summary, figure.benchmark),
    "judge_agreement": lambda tables, job, figure: jury_figures.judge_agreement_figure(
        tables.jury["judge_agreement"], figure.benchmark
    ),
    "judge_bias": lambda tables, job, figure: jury_figures.judge_bias_figure(
        tables.jury["judge_bias"], figure.benchmark
    ),
    "jury_stability": lambda tables, job, figure: jury_figures.jury_stability_figure(
        tables.jury["jury_stability"], figure.benchmark
    ),
    "study": lambda tables, job, figure: study_figures.study_figure(
        tables.studies,
        tables.study_samples.get(figure.study or ""),
        next(page for page in job.studies if page.name == figure.study),
        job.view_metrics,
        job.comparison_alpha or 0.05,
    ),
    "table6": lambda tables, job, figure: study_figures.table6_figure(tables.table6),
    "human_agreement": lambda tables, job, figure: jury_figures.human_agreement_figure(
        tables.jury["human_agreement"], tables.jury["human_rater_agreement"]
    ),
}


def _of_set(table: pl.DataFrame | None, figure: FigureSpec) -> pl.DataFrame:
    """The rows of a comparison table over the figure's model set (an empty table where none was computed)."""
    if table is None:
        return pl.DataFrame(schema={"model_set": pl.String, "benchmark": pl.String, "metric": pl.String})
    return table.filter(pl.col("model_set") == figure.model_set)


def report_pages(tables: AnalysisTables, job: ReportJob) -> list[tuple[str, object]]:
    """Every page of the report, drawn from tables computed before (careval.analysis.report_tables): exactly the
    job's figures (the plan's, AnalysisPlan.figures), in their order, each by its kind's drawing (DRAW)."""
    return [(figure.name, DRAW[figure.kind](tables, job, figure)) for figure in job.figures]


def save_pages(pages: list[tuple[str, object]], pdf_path: Path, figures_dir: Path, workers: int = 1) -> list[Path]:
    """One PDF page and one PNG per figure. With ``workers`` >= 2 (and fork), a forked copy of this
    process renders the PNGs while this one writes the PDF: drawing is nearly all of the report's time."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    written = [figures_dir / f"{name}.png" for name, _ in pages]
    pngs = None
    try:
        if workers >= 2 and "fork" in multiprocessing.get_all_start_methods():
            pngs = multiprocessing.get_context("fork").Process(target=_png_process, args=(pages, written), daemon=True)
            pngs.start()
        with PdfPages(pdf_path) as pdf:
            for _, fig in pages:
                pdf.savefig(fig)
        if pngs is None:
            _save_pngs(pages, written)
        else:
            pngs.join()
            if pngs.exitcode == errno.ENOSPC:  # _png_process: the cause, not only that it failed
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(figures_dir))
            if pngs.exitcode != 0:
                raise RuntimeError(
                    f"drawing the PNGs in {figures_dir} failed (exit code {pngs.exitcode}); see the log above"
                )
    finally:
        if pngs is not None and pngs.is_alive():  # the PDF failed: stop the PNGs too
            pngs.terminate()
        for _, fig in pages:
            plt.close(fig)
    return written


def _png_process(pages: list[tuple[str, object]], paths: list[Path]) -> None:
    """_save_pngs in the forked process, whose exit code says a full disk (ENOSPC) apart from other failures."""
    try:
        _save_pngs(pages, paths)
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        print(f"drawing the PNGs: {error}", file=sys.stderr)
        sys.exit(errno.ENOSPC)


def _save_pngs(pages: list[tuple[str, object]], paths: list[Path]) -> None:
    for (_, fig), path in zip(pages, paths):
        fig.savefig(path, dpi=110)
