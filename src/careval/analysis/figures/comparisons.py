"""The report's pages of the paired comparisons (win / tie / loss matrices, rankings with their tied groups, adjacent
ranks that differ) and of cost (quality against cost, the efficiency frontier); they only draw computed tables."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.colors import ListedColormap

from careval.analysis.cost import efficiency_frontier, model_totals
from careval.analysis.figures.text_pages import empty_page, unsigned_zero, wrap_to
from careval.metrics.registry import higher_is_better

OUTCOME_COLOURS = ListedColormap(["#d6604d", "#e0e0e0", "#4d9221"])  # loss, tie, win


def _short(name: str, width: int = 18) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def win_tie_loss_figure(outcomes: pl.DataFrame, members: tuple[str, ...], benchmark: str, set_name: str, rule: str):
    """One matrix per metric: row model against column model, green a significant win, red a significant loss,
    grey a tie (not significant after adjustment); cells show the difference (row - column), * when significant."""
    block = outcomes.filter(pl.col("benchmark") == benchmark)
    title = f"Paired comparisons on {benchmark}, model set '{set_name}'"
    if block.is_empty():
        return empty_page(title, "no comparisons (fewer than two models scored here)")
    metrics = block["metric"].unique(maintain_order=True).to_list()
    models = [m for m in members if m in set(block["model_a"]) | set(block["model_b"])]
    at = {m: i for i, m in enumerate(models)}
    cols = min(len(metrics), 5 if len(models) <= 6 else 3)
    rows = math.ceil(len(metrics) / cols)
    side = 1.2 + 0.32 * len(models)
    width = max(6.0, cols * side + 1.5)  # one metric: still room for the header and the model names
    header = wrap_to(
        f"{title}\nrow vs column: green = row significantly better, red = significantly worse, grey = tie; "
        f"* significant after {rule}",
        width - 0.3,
        9,
    )
    header_inches = 0.2 + 0.16 * (header.count("\n") + 1)  # a narrow page (two metrics) wraps it to more lines
    # under each row of matrices its model names, rotated 60 degrees (14 characters at most: 0.6 x the font's size
    # per character, sin 60 of it upright)
    names_inches = 14 * 0.6 * (6 if len(models) <= 6 else 4) / 72 * 0.87 + 0.1
    height = rows * (side + 0.6 + names_inches) + 1.2 + header_inches
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    font = 6 if len(models) <= 6 else 4
    for ax in axes.flat[len(metrics) :]:
        ax.axis("off")
    for ax, metric in zip(axes.flat, metrics):
        cells = block.filter(pl.col("metric") == metric)
        grid = np.full((len(models), len(models)), np.nan)
        text = [["" for _ in models] for _ in models]
        for a, b, diff, result in cells.select("model_a", "model_b", "diff", "outcome").iter_rows():
            if a not in at or b not in at:
                continue
            i, j = at[a], at[b]
            grid[i, j], grid[j, i] = result, -result
            mark = "*" if result else ""
            if diff is not None and math.isfinite(diff):
                text[i][j], text[j][i] = (unsigned_zero(f"{d:+.2g}") + mark for d in (diff, -diff))
            else:
                text[i][j] = text[j][i] = "n/a"
        ax.imshow(np.where(np.isnan(grid), 0, grid), cmap=OUTCOME_COLOURS, vmin=-1, vmax=1)
        for i in range(len(models)):
            for j in range(len(models)):
                ax.text(j, i, "—" if i == j else text[i][j], ha="center", va="center", fontsize=font)
        labels = [_short(m, 14) for m in models]
        ax.set_xticks(range(len(models)), labels, rotation=60, ha="right", fontsize=font)
        ax.set_yticks(range(len(models)), labels, fontsize=font)
        arrow = "higher is better" if higher_is_better(metric) else "lower is better"
        ax.set_title(f"{_short(metric, 24)}\n({arrow})", fontsize=7)
    fig.suptitle(header, fontsize=9)
    # room below: tight_layout sizes the rotated model names a few pixels short of the page's edge
    fig.tight_layout(rect=(0, (0.15 + names_inches) / height, 1, 1 - header_inches / height))
    return fig


def groups_figure(groups: pl.DataFrame, adjacent: pl.DataFrame, benchmark: str, set_name: str, rule: str):
    """Each metric's ranking (best first) with its compact letter display: models sharing a letter are not
    significantly different; the last column counts the adjacent ranks that are."""
    block = groups.filter(pl.col("benchmark") == benchmark)
    title = f"Rankings with statistically tied groups on {benchmark}, model set '{set_name}'"
    if block.is_empty():
        return empty_page(title, "no rankings")
    metrics = block["metric"].unique(maintain_order=True).to_list()
    width = int(block["position"].max())
    counts = {
        m: (s, k)
        for m, s, k in adjacent.filter(pl.col("benchmark") == benchmark)
        .select("metric", "significant", "adjacent_pairs")
        .iter_rows()
    }
    cells = []
    for metric in metrics:
        ranked = block.filter(pl.col("metric") == metric).sort("position")
        row = [f"{_short(m, 16)} ({letters})" for m, letters in ranked.select("model", "letters").iter_rows()]
        significant, pairs = counts.get(metric, (0, 0))
        cells.append([_short(metric, 30), *row, *[""] * (width - len(row)), f"{significant}/{pairs}"])
    fig, ax = plt.subplots(figsize=(min(40, 3 + 1.9 * width), 1.4 + 0.3 * len(metrics)))
    ax.axis("off")
    columns = ["metric", *[f"#{k}" for k in range(1, width + 1)], "adjacent\nsignificant"]
    table = ax.table(cellText=cells, colLabels=columns, loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(6)
    table.scale(1, 1.3)
    table.auto_set_column_width(list(range(len(columns))))
    for (row, _), cell in table.get_celld().items():
        if row == 0:  # the header's two lines ("adjacent / significant") in a row of two lines' height
            cell.set_height(cell.get_height() * 2)
    ax.set_title(
        wrap_to(
            f"{title}\nbest first by the benchmark value; models sharing a letter do not differ significantly "
            f"({rule}-adjusted paired tests)",
            fig.get_figwidth() - 0.3,
            9,
        ),
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def adjacent_figure(adjacent: pl.DataFrame, set_name: str, rule: str):
    """Per benchmark x metric: the share of adjacent ranks that differ significantly (text: count / pairs)."""
    title = f"Adjacent ranks that differ significantly, model set '{set_name}' ({rule})"
    if adjacent.is_empty():
        return empty_page(title, "no rankings")
    benchmarks = adjacent["benchmark"].unique(maintain_order=True).to_list()
    metrics = adjacent["metric"].unique(maintain_order=True).to_list()
    share = np.full((len(benchmarks), len(metrics)), np.nan)
    text = [["" for _ in metrics] for _ in benchmarks]
    for b, m, s, k in adjacent.select("benchmark", "metric", "significant", "adjacent_pairs").iter_rows():
        i, j = benchmarks.index(b), metrics.index(m)
        share[i, j] = s / k if k else np.nan
        text[i][j] = f"{s}/{k}"
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(metrics) + 3), max(3, 0.4 * len(benchmarks) + 2.5)))
    image = ax.imshow(share, cmap="Greens", vmin=0, vmax=1, aspect="auto")
    for i in range(len(benchmarks)):
        for j in range(len(metrics)):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(metrics)), [_short(m, 28) for m in metrics], rotation=60, ha="right", fontsize=6)
    ax.set_yticks(range(len(benchmarks)), benchmarks, fontsize=7)
    plt.colorbar(image, ax=ax, fraction=0.03, label="share significant")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def cost_figure(
    summary: pl.DataFrame,
    cost: pl.DataFrame,
    benchmark: str,
    metric: str,
    axis: str,
    members,
    request_cache: pl.DataFrame | None = None,
):
    """The chosen quality against each model's summed cost; the efficiency frontier joined by a line; under it, the
    run's requests read from the request cache and computed, and the cache's size."""
    if cost is None:
        return empty_page("Quality against cost", "no cost table was given (results/summary/cost.parquet)")
    totals = model_totals(cost.filter(pl.col("model").is_in(list(members))))
    label = {
        "needed_gpu_seconds": "GPU-seconds the results needed",
        "needed_seconds": "engine seconds the results needed",
        "wall_seconds": "wall seconds of this run",
        "tokens": "tokens the results needed (prompt + generated)",
    }
    note = ""
    if axis == "gpu_seconds":  # what the results needed (each cache entry keeps its cost), not what this run spent
        axis = "needed_gpu_seconds"
        if not (totals["needed_gpu_seconds"].fill_null(0) > 0).any():
            axis, note = "needed_seconds", " (no engine used a GPU: its seconds instead)"
    if axis.startswith("needed_") and totals[axis].null_count() == totals.height:
        # results of a careval that kept no engine seconds: what this run spent is the one time known
        axis, note = "wall_seconds", " (the jobs' records keep no engine seconds: this run's instead)"
    quality = summary.filter((pl.col("benchmark") == benchmark) & (pl.col("metric") == metric))
    table = totals.join(quality.select("model", "value"), on="model", how="left").sort("model")
    title = f"Quality against cost: {metric} on {benchmark}\nvs {label[axis]} (all the model's jobs)"
    if table.is_empty() or table["value"].null_count() == table.height:
        return empty_page(title, f"no {metric} on {benchmark} in scores.parquet (analysis.cost.benchmark / metric)")
    x = table[axis].cast(pl.Float64).fill_null(np.nan).to_numpy()
    y = table["value"].fill_null(np.nan).to_numpy()
    best = higher_is_better(metric)
    front = efficiency_frontier(x, y, best)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.scatter(x[~front], y[~front], color="grey", label="dominated")
    ax.scatter(x[front], y[front], color="#1b7837", label="efficiency frontier")
    order = np.argsort(x[front])
    ax.plot(x[front][order], y[front][order], color="#1b7837", linewidth=1)
    for xi, yi, model in zip(x, y, table["model"]):
        if math.isfinite(xi) and math.isfinite(yi):
            # a name on the right half reads leftwards, so it never runs past the axes
            right = xi > np.nanmedian(x) if np.nanmax(x) > np.nanmin(x) else False
            ax.annotate(
                _short(model, 24),
                (xi, yi),
                textcoords="offset points",
                xytext=(-4, 4) if right else (4, 4),
                ha="right" if right else "left",
                fontsize=7,
            )
    ax.set_xlabel(f"{label[axis]}{note}")
    ax.set_ylabel(f"{metric} ({'higher' if best else 'lower'} is better)")
    if np.nanmax(x) > 0 and np.nanmin(x) > 0 and np.nanmax(x) / np.nanmin(x) > 30:
        ax.set_xscale("log")
    ax.margins(x=0.2, y=0.1)  # room for the names beside the points
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    footer = cache_line(cost, request_cache)
    unknown = table.filter(pl.col(axis).is_null() & pl.col("value").is_not_null())["model"].to_list()
    if unknown:  # a point at 0 would say they cost nothing
        footer = f"not drawn, their {label[axis]} unknown (records from before careval kept them): " + (
            f"{', '.join(unknown)}\n{footer}"
        )
    fig.text(0.01, 0.01, footer, fontsize=7, color="dimgrey", wrap=True)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def cache_line(cost: pl.DataFrame, request_cache: pl.DataFrame | None) -> str:
    """The cost page's line on the request cache: this run's hits and misses (the LLM jobs that ran), its size."""
    hits, misses = (int(cost[column].fill_null(0).sum()) for column in ("cached_requests", "computed_requests"))
    line = f"LLM requests: {misses:,} computed, {hits:,} read from the request cache"
    if hits + misses:
        line += f" ({hits / (hits + misses):.0%})"
    if request_cache is None or request_cache.is_empty() or request_cache["directory"][0] is None:
        return line + "; request cache off (resources.cache: false)"
    row = request_cache.row(0, named=True)
    return line + f"; the cache ({row['directory']}): {row['entries']:,} entries, {row['bytes'] / 2**20:.1f} MB"
