"""The correlation heatmaps' drawing: each cell's r, interval and p-value sized to fit it, and the notes under them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from careval.analysis.figures.text_pages import unsigned_zero
from careval.analysis.statistics.correlations import square
from careval.metrics.registry import higher_is_better

CMAP = "RdBu_r"


def cell_text(r: float, low: float | None, high: float | None, p: float | None, lines: int = 3) -> str:
    """A heatmap cell's text: r, then its interval, then its p-value, as many of these lines as fit (`lines`)."""
    if r is None or np.isnan(r):
        return "n/a"
    text = unsigned_zero(f"{r:.2f}")
    if lines >= 2 and low is not None and not np.isnan(low):
        text += f"\n[{unsigned_zero(f'{low:.2f}')},{unsigned_zero(f'{high:.2f}')}]"
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


def heatmap(
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
            text = cell_text(
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


def block_of(table: pl.DataFrame, **where) -> pl.DataFrame:
    for column, value in where.items():
        table = table.filter(pl.col(column).is_null() if value is None else pl.col(column) == value)
    return table


def squares(block: pl.DataFrame, order: list[str] | None = None):
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


def joined_notes(*parts: str) -> str:
    """A page's note from its parts, the empty ones left out."""
    return " ".join(part for part in parts if part)
