"""The Appendix E tables as files: results/tables/table<N>_<slug>.{csv,md,tex}, and each as one report page.

A table is models x (benchmark, metric): each cell the summary's value with its bootstrap interval (each
benchmark's sample ids resampled, the model's score recomputed: careval.analysis.statistics.bootstrap), and per
benchmark n (samples scored, the most over the table's metrics) and n_failed (the most failures of any).
The CSV is wide and self-describing: columns `<benchmark>/<metric>`, `.../ci_low`, `.../ci_high`,
`<benchmark>/n`, `<benchmark>/n_failed`. The Markdown, LaTeX and the page mark careval's additions (benchmarks
outside the paper's Table 1) with a dagger and a note; the CSV keeps the plain names (its column keys).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from careval.analysis.additions import MARK, addition_note, marked
from careval.analysis.aggregate import MCQA_AVERAGE
from careval.analysis.figures.text_pages import wrap_to
from careval.analysis.statistics.bootstrap import Resampled, percentile_interval, resample_model_scores
from careval.analysis.tables.paper_tables import PAPER_TABLES, PaperTablesJob, TableSpec, metric_order, table_metric
from careval.latex import latex_escape
from careval.metrics.registry import metric_spec

SEP = "/"
DAGGER = r"$^\dagger$"  # the addition's mark in LaTeX
FORMATS = ("csv", "md", "tex")


def table_columns(summary: pl.DataFrame, spec: TableSpec, rubrics: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """(benchmark, its metric columns) in the table's order; Table 20 leads with the MCQA weighted average."""
    groups = []
    benchmarks = list(spec.benchmarks)
    if spec.kind == "close_ended" and "mcqa" in spec.tasks.values():
        benchmarks.insert(0, MCQA_AVERAGE)
    for benchmark in benchmarks:
        task = "mcqa" if benchmark == MCQA_AVERAGE else spec.tasks[benchmark]
        present = summary.filter(pl.col("benchmark") == benchmark)["metric"].unique().to_list()
        metrics = metric_order([m for m in present if table_metric(spec.kind, task, m)], rubrics)
        if metrics:
            groups.append((benchmark, metrics))
    return groups


def _interval(resampled: Resampled | None, key: tuple[str, str], model: str, confidence: float | None):
    values = None if resampled is None else resampled.get(key)
    if values is None or resampled is None or confidence is None or model not in resampled.models:
        return float("nan"), float("nan")
    return percentile_interval(values[1:, resampled.models.index(model)], confidence)


def build_table(
    summary: pl.DataFrame,
    spec: TableSpec,
    rubrics: tuple[str, ...],
    resampled: Resampled | None = None,
    confidence: float | None = None,
) -> pl.DataFrame:
    """The wide table of `spec`: one row per model (by name), the value, interval (where `resampled` and its
    `confidence` are given; NaN otherwise), n and n_failed columns."""
    groups = table_columns(summary, spec, rubrics)
    cells = {
        (m, b, metric): (value, n, failed)
        for m, b, metric, value, n, failed in summary.select(
            "model", "benchmark", "metric", "value", "n", "n_failed"
        ).iter_rows()
    }
    models = sorted(summary["model"].unique().to_list())
    rows = []
    for model in models:
        row: dict[str, object] = {"model": model}
        for benchmark, metrics in groups:
            ns, fails = [], []
            for metric in metrics:
                value, n, failed = cells.get((model, benchmark, metric), (None, None, None))
                low, high = _interval(resampled, (benchmark, metric), model, confidence)
                row[f"{benchmark}{SEP}{metric}"] = value
                row[f"{benchmark}{SEP}{metric}{SEP}ci_low"] = low
                row[f"{benchmark}{SEP}{metric}{SEP}ci_high"] = high
                ns += [n] if n is not None else []
                fails += [failed] if failed is not None else []
            row[f"{benchmark}{SEP}n"] = max(ns) if ns else None
            row[f"{benchmark}{SEP}n_failed"] = max(fails) if fails else None
        rows.append(row)
    schema = {"model": pl.String}
    for benchmark, metrics in groups:
        for metric in metrics:
            for suffix in ("", f"{SEP}ci_low", f"{SEP}ci_high"):
                schema[f"{benchmark}{SEP}{metric}{suffix}"] = pl.Float64
        schema[f"{benchmark}{SEP}n"] = pl.Int64
        schema[f"{benchmark}{SEP}n_failed"] = pl.Int64
    return pl.DataFrame(rows, schema=schema, orient="row").fill_nan(None)


def groups_of(table: pl.DataFrame) -> list[tuple[str, list[str]]]:
    """(benchmark, metrics) back from a wide table's column names."""
    groups: dict[str, list[str]] = {}
    for column in table.columns[1:]:
        parts = column.split(SEP)
        if len(parts) == 2 and parts[1] not in ("n", "n_failed"):
            groups.setdefault(parts[0], []).append(parts[1])
    return list(groups.items())


def fmt(value) -> str:
    """A value at the paper's precision: 3 decimals, fewer for large values (perplexities)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    size = abs(value)
    return f"{value:.0f}" if size >= 1000 else f"{value:.1f}" if size >= 100 else f"{value:.3f}"


def cell_text(row: dict, benchmark: str, metric: str, interval_sep: str = " ") -> str:
    key = f"{benchmark}{SEP}{metric}"
    text = fmt(row[key])
    low, high = row[f"{key}{SEP}ci_low"], row[f"{key}{SEP}ci_high"]
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f"{interval_sep}[{fmt(low)}, {fmt(high)}]"
    return text


def count_text(row: dict, benchmark: str) -> str:
    n, failed = row[f"{benchmark}{SEP}n"], row[f"{benchmark}{SEP}n_failed"]
    return "n/a" if n is None else f"{n} ({failed or 0})"


def metric_label(metric: str) -> str:
    return metric_spec(metric).label or metric


def _caption(spec_or_name) -> str:
    name = spec_or_name if isinstance(spec_or_name, str) else spec_or_name.name
    table = next(t for t in PAPER_TABLES if t.name == name)
    return f"Table {table.number}: {table.caption}"


def NOTE(confidence: float) -> str:
    return (
        f"Cells: value [bootstrap {confidence:.0%} CI over resampled samples]; n (failed): samples scored "
        "(the most over the metrics shown) and failed (the most of any metric)."
    )


def _with_additions(note: str, groups: list[tuple[str, list[str]]], additions: tuple[str, ...]) -> str:
    """The table's note, and the dagger's where it shows an addition."""
    return " ".join(part for part in (note, addition_note([b for b, _ in groups], additions)) if part)


def to_markdown(table: pl.DataFrame, caption: str, note: str, additions: tuple[str, ...] = ()) -> str:
    groups = groups_of(table)
    note = _with_additions(note, groups, additions)
    header = ["model"]
    for benchmark, metrics in groups:
        name = marked(benchmark, additions)
        header += [f"{name}<br>{metric_label(m)}" for m in metrics] + [f"{name}<br>n (failed)"]
    lines = [f"**{caption}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.iter_rows(named=True):
        cells = [row["model"]]
        for benchmark, metrics in groups:
            cells += [cell_text(row, benchmark, m) for m in metrics] + [count_text(row, benchmark)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", note, ""])


def to_latex(table: pl.DataFrame, caption: str, label: str, note: str, additions: tuple[str, ...] = ()) -> str:
    """A booktabs table: one column group per benchmark (its metrics, then n (failed)), models as rows."""
    groups = groups_of(table)
    note = _with_additions(note, groups, additions)
    spans, top, second, start = [], [r"\multirow{2}{*}{Model}"], [""], 2
    for benchmark, metrics in groups:
        width = len(metrics) + 1
        dagger = DAGGER if benchmark in additions else ""
        top.append(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(benchmark)}{dagger}}}")
        spans.append(rf"\cmidrule(lr){{{start}-{start + width - 1}}}")
        second += [latex_escape(metric_label(m)) for m in metrics] + ["n (failed)"]
        start += width
    body = []
    for row in table.iter_rows(named=True):
        cells = [latex_escape(row["model"])]
        for benchmark, metrics in groups:
            for metric in metrics:
                value, _, interval = cell_text(row, benchmark, metric, "\t").partition("\t")
                cells.append(value + (rf" {{\scriptsize {interval}}}" if interval else ""))
            cells.append(count_text(row, benchmark))
        body.append(" & ".join(cells) + r" \\")
    columns = "l" + "".join("c" * (len(m) + 1) for _, m in groups)
    return "\n".join(
        [
            r"% needs \usepackage{booktabs,multirow}",
            r"\begin{table*}[t]",
            r"\centering",
            r"\resizebox{\textwidth}{!}{%",
            rf"\begin{{tabular}}{{{columns}}}",
            r"\toprule",
            " & ".join(top) + r" \\",
            " ".join(spans),
            " & ".join(second) + r" \\",
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}}",
            rf"\caption{{{latex_escape(caption)} {latex_escape(note).replace(MARK, DAGGER)}}}",
            rf"\label{{tab:{label}}}",
            r"\end{table*}",
            "",
        ]
    )


def write_paper_tables(summary_path: Path, samples_path: Path, job: PaperTablesJob, out_dir: Path) -> list[Path]:
    """Job: every planned table as CSV, Markdown and LaTeX under `out_dir` (results/tables/)."""
    summary = pl.read_parquet(summary_path)
    resampled, boot = None, job.bootstrap
    if boot is not None:
        samples = pl.read_parquet(samples_path)
        average = None if job.mcqa_average is None else list(job.mcqa_average)
        resampled = resample_model_scores(samples, boot.resamples, boot.seed, average)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    note = "Cells: value (no bootstrap: resamples 0)." if boot is None else NOTE(boot.confidence)
    for spec in job.tables:
        table = build_table(summary, spec, job.rubrics, resampled, None if boot is None else boot.confidence)
        caption = _caption(spec)
        paths = {fmt_: out_dir / f"{spec.name}.{fmt_}" for fmt_ in FORMATS}
        table.write_csv(paths["csv"])
        paths["md"].write_text(to_markdown(table, caption, note, job.additions))
        paths["tex"].write_text(to_latex(table, caption, spec.name, note, job.additions))
        written += list(paths.values())
    return written


def table_figure(table: pl.DataFrame, name: str, additions: tuple[str, ...] = (), max_columns: int = 6):
    """One report page: the table in blocks of at most `max_columns` columns, each cell value over its interval."""
    import matplotlib.pyplot as plt

    groups = groups_of(table)
    columns = [(b, m) for b, metrics in groups for m in metrics] + [(b, None) for b, _ in groups]
    columns.sort(key=lambda c: [b for b, _ in groups].index(c[0]))  # each benchmark's n after its metrics
    blocks = [columns[i : i + max_columns] for i in range(0, len(columns), max_columns)] or [[]]
    rows = table.to_dicts()
    height = sum(0.75 + 0.36 * (len(rows) + 1) for _ in blocks) + 0.9
    fig, axes = plt.subplots(len(blocks), 1, figsize=(11, height), squeeze=False)
    for ax, block in zip(axes[:, 0], blocks):
        ax.axis("off")
        labels = ["model"] + [f"{marked(b, additions)}\n{metric_label(m) if m else 'n (failed)'}" for b, m in block]
        cells = [
            [row["model"]] + [cell_text(row, b, m, "\n") if m else count_text(row, b) for b, m in block] for row in rows
        ]
        if not cells:
            ax.text(0.5, 0.5, "no model scored", ha="center", va="center")
            continue
        tab = ax.table(cellText=cells, colLabels=labels, loc="center", cellLoc="center")
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)
        tab.scale(1, 2.3)
        tab.auto_set_column_width(list(range(len(labels))))
    fig.suptitle(wrap_to(_caption(name), 11 - 0.3, 11), fontsize=11)
    finite = [c for c in table.columns if c.endswith(f"{SEP}ci_low")]
    has_ci = any(np.isfinite(np.array(table[c].to_list(), dtype=float)).any() for c in finite)
    note = "Cells: value, [bootstrap CI]; n (failed) per benchmark." if has_ci else "Cells: value (no intervals)."
    note = _with_additions(note + f" Files: results/tables/{name}.csv / .md / .tex", groups, additions)
    fig.text(0.01, 0.005, note, fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    return fig
