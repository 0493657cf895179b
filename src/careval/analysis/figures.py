"""The correlation figures: one titled, labelled page per analysis in a PDF, and the same figures as PNG."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from careval.analysis.aggregate import MCQA_AVERAGE  # noqa: E402
from careval.analysis.correlations import mcqa_vs_open, metric_matrices, metric_matrix  # noqa: E402

CMAP = "RdBu_r"


def _heatmap(ax, matrix: np.ndarray, rows: list[str], cols: list[str], title: str) -> None:
    image = ax.imshow(matrix, cmap=CMAP, vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_title(title, fontsize=9)
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            value = matrix[i, j]
            ax.text(j, i, "n/a" if np.isnan(value) else f"{value:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if not np.isnan(value) and abs(value) > 0.6 else "black")
    plt.colorbar(image, ax=ax, fraction=0.03, label="correlation coefficient")


def mcqa_vs_open_figure(summary: pl.DataFrame, methods: list[str]):
    table = mcqa_vs_open(summary, methods)
    benchmarks = sorted(table["benchmark"].unique())
    metrics = list(dict.fromkeys(table["y"]))
    n_models = summary.filter(pl.col("benchmark") == MCQA_AVERAGE)["model"].n_unique()
    fig, axes = plt.subplots(len(methods), 1, figsize=(11, 2.2 + 1.6 * len(benchmarks) * len(methods)), squeeze=False)
    for ax, method in zip(axes[:, 0], methods):
        matrix = np.full((len(benchmarks), len(metrics)), np.nan)
        for row in table.filter(pl.col("method") == method).iter_rows(named=True):
            matrix[benchmarks.index(row["benchmark"]), metrics.index(row["y"])] = row["r"]
        _heatmap(ax, matrix, benchmarks, metrics, f"{method.capitalize()} correlation (x: open-ended metric, y: benchmark)")
    fig.suptitle(f"MCQA weighted-average accuracy vs open-ended benchmark x metric ({n_models} models)", fontsize=11)
    fig.text(0.01, 0.005, "Perplexity-type metrics are lower-is-better: a negative coefficient means agreement with MCQA.",
             fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 0.96))
    return fig


def metric_matrix_figure(summary: pl.DataFrame, benchmark: str, methods: list[str]):
    n_models = summary.filter(pl.col("benchmark") == benchmark)["model"].n_unique()
    fig, axes = plt.subplots(1, len(methods), figsize=(7.5 * len(methods), 7), squeeze=False)
    for ax, method in zip(axes[0], methods):
        names, matrix, _ = metric_matrix(summary, benchmark, method)
        _heatmap(ax, matrix, names, names, f"{method.capitalize()} (metric vs metric)")
    fig.suptitle(f"Metric x metric correlation on {benchmark} across {n_models} models", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def scores_figure(summary: pl.DataFrame):
    """An overview page: every model's headline numbers, so the correlations can be read against them."""
    table = summary.filter(pl.col("metric").is_in(["acc", "rougeL", "bleu", "bertscore_f1", "word_perplexity"]))
    short = pl.col("benchmark").str.replace(MCQA_AVERAGE, "MCQA avg", literal=True)
    wide = table.with_columns(column=short + "\n" + pl.col("metric")).pivot(
        on="column", index="model", values="value").sort("model")
    columns = wide.columns[1:]
    fig, ax = plt.subplots(figsize=(max(11, 1.3 * (len(columns) + 2)), 1.8 + 0.45 * wide.height))
    ax.axis("off")
    cells = [[row[0], *(f"{v:.3g}" if v is not None else "n/a" for v in row[1:])] for row in wide.iter_rows()]
    tab = ax.table(cellText=cells, colLabels=["model", *columns], loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(6)
    tab.scale(1, 2.4)
    tab.auto_set_column_width(list(range(len(columns) + 1)))
    ax.set_title("Scores per model (results/summary/scores.parquet; perplexity: lower is better)", fontsize=11)
    return fig


def write_correlation_report(summary_path: Path, pdf_path: Path, figures_dir: Path, table_path: Path,
                             methods: list[str]) -> list[Path]:
    summary = pl.read_parquet(summary_path)
    figures_dir.mkdir(parents=True, exist_ok=True)
    table = pl.concat([mcqa_vs_open(summary, methods), metric_matrices(summary, methods)])
    table_path.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(table_path)
    pages = [("scores", scores_figure(summary)), ("mcqa_vs_open", mcqa_vs_open_figure(summary, methods))]
    for benchmark in sorted(summary.filter(pl.col("task") == "open")["benchmark"].unique()):
        pages.append((f"metric_x_metric_{benchmark}", metric_matrix_figure(summary, benchmark, methods)))
    written = []
    with PdfPages(pdf_path) as pdf:
        for name, fig in pages:
            pdf.savefig(fig)
            png = figures_dir / f"{name}.png"
            fig.savefig(png, dpi=110)
            written.append(png)
            plt.close(fig)
    return written
