"""The CareQA report pages (paper appendix A): Table 4 as a page, figures 5-6 (questions per category and year of the
closed and open sets) and figure 7 (review correctness per category); they draw tables careqa.statistics wrote."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl

from careval.analysis.figures.text_pages import empty_page
from careval.careqa.statistics import TABLE4_COLUMNS, TOTAL, _cell

SET_TITLES = {
    "closed": "Figure 5: CareQA (close-ended), questions per category and year",
    "open": "Figure 6: CareQA (open-ended), questions per category and year",
}


def table4_figure(table: pl.DataFrame, caption: str):
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.35 * table.height))
    ax.axis("off")
    cells = [[_cell(v) for v in row] for row in table.iter_rows()]
    drawn = ax.table(cellText=cells, colLabels=[TABLE4_COLUMNS[c] for c in table.columns], loc="center")
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(9)
    drawn.scale(1, 1.4)
    for (row, _), cell in drawn.get_celld().items():
        if row == 0 or (row > 0 and cells[row - 1][0] == TOTAL):
            cell.set_text_props(fontweight="bold")
    fig.suptitle("Table 4: CareQA (close-ended) dataset statistics", fontsize=11)
    fig.text(0.01, 0.01, caption.split("; ", 1)[1], fontsize=7, wrap=True)
    return fig


def categories_figure(table: pl.DataFrame, set_name: str):
    """Stacked bars: one per exam year, one segment per category, labelled with its count."""
    block = table.filter(pl.col("set") == set_name)
    years = sorted(block["year"].unique().to_list())
    categories = sorted(block["category"].unique().to_list())
    fig, ax = plt.subplots(figsize=(8, 5))
    bottom = [0] * len(years)
    colours = plt.get_cmap("tab10")
    for index, category in enumerate(categories):
        counts = dict(block.filter(pl.col("category") == category).select("year", "questions").iter_rows())
        heights = [counts.get(year, 0) for year in years]
        bars = ax.bar([str(y) for y in years], heights, bottom=bottom, label=category, color=colours(index % 10))
        ax.bar_label(bars, labels=[str(h) if h else "" for h in heights], label_type="center", fontsize=8)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_ylim(0, max(bottom, default=0) * 1.08 + 1)
    ax.set_xlabel("exam year")
    ax.set_ylabel("questions")
    ax.legend(title="category", bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=8)
    total = int(block["questions"].sum()) if block.height else 0
    ax.set_title(f"{SET_TITLES[set_name]} ({total} questions)", fontsize=11)
    if not block.height:
        ax.text(0.5, 0.5, "no questions", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return fig


REVIEW_TITLE = "Figure 7: CareQA human review, correctness per category"


def review_figure(table: pl.DataFrame, folder: str | None = None):
    """One panel per review kind: per category, the share of items tagged correct by >= 1, >= 2 and all reviewers.
    Without a filled sheet yet (the page is planned from careqa.review.filled_sheets), a page says where they go."""
    if not table.height:
        return empty_page(
            REVIEW_TITLE,
            f"No filled review sheet in {folder or 'careqa.review.filled_sheets'} yet.\nOne CSV per reviewer in "
            "<folder>/translation/ and <folder>/rephrasing/,\neach a filled copy of results/careqa/review/<kind>/"
            "sheet.csv (snakemake careqa).\nThe report is remade once they are there.",
        )
    kinds = list(dict.fromkeys(table["kind"].to_list()))
    fig, axes = plt.subplots(1, max(len(kinds), 1), figsize=(6 * max(len(kinds), 1), 5), squeeze=False)
    rows = (
        ("at_least_one", "correct by >= 1"),
        ("at_least_two", "correct by >= 2"),
        ("all_reviewers", "correct by all"),
    )
    width = 0.8 / len(rows)
    for ax, kind in zip(axes[0], kinds):
        block = table.filter(pl.col("kind") == kind)
        categories = block["category"].to_list()
        for index, (column, label) in enumerate(rows):
            positions = [i + (index - 1) * width for i in range(len(categories))]
            bars = ax.bar(positions, [100 * v for v in block[column]], width, label=label)
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks(range(len(categories)), [f"{c}\n(n={n})" for c, n in zip(categories, block["items"])], fontsize=8)
        ax.set_ylim(0, 125)  # headroom for the bar labels and the legend above the bars
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("% of reviewed items")
        ax.set_title(kind, fontsize=10)
        ax.legend(fontsize=7, loc="upper center", ncol=len(rows), frameon=False)
    fig.suptitle(REVIEW_TITLE, fontsize=11)
    fig.tight_layout()
    return fig
