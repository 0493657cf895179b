"""The report's pages of the studies (config `studies:`): per study, every variant against each model's baseline, and
paper Table 6. They only draw computed tables (careval.analysis.studies.tables, careval.analysis.tables.table6).

A study's page is one grid: a row per benchmark x metric x variant, a column per model and one for the rank
agreement. A cell shows the paired difference (variant - baseline, in the metric's own unit) and a star where it is
significant after Holm's adjustment within the study; its colour is the relative change (the difference over the
baseline's value), blue where the variant does better and red where worse by the metric's direction, so metrics of
different scales share one colour scale and no axis. A study of the resilience analysis adds figure 13's layout for
each variant: every metric's per-sample variance over rephrasings (averaged over the runs, then over the models),
each metric scaled by its largest value over the variants, so the variants compare on one scale.
"""

from __future__ import annotations

import math
import textwrap

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from careval.analysis.figures.text_pages import empty_page
from careval.analysis.studies.tables import StudyPage
from careval.metrics.registry import REPHRASE_VARIANCE, higher_is_better, metric_spec

# the relative change at which a cell's colour saturates
SATURATION = 0.5


def shown_metrics(samples: pl.DataFrame, view: tuple[str, ...] | None, family: str | None) -> pl.DataFrame:
    """(benchmark, metric) pairs a study's page shows: close-ended rows, the view's open-ended metrics (analysis
    .metric_view; a variance over rephrasings by its metric) and every metric of a swept family."""
    pairs = samples.select("benchmark", "task", "metric").unique(maintain_order=True)
    if view is None:
        return pairs
    base = pl.col("metric").str.replace(f"{REPHRASE_VARIANCE}$", "")
    keep = (pl.col("task") != "open") | base.is_in(list(view))
    if family is not None:
        keep = keep | pl.col("metric").map_elements(lambda m: metric_spec(m).family == family, return_dtype=pl.Boolean)
    return pairs.filter(keep)


def _colour(diff: float, baseline: float, metric: str) -> float:
    if not (math.isfinite(diff) and math.isfinite(baseline)):
        return math.nan
    relative = diff / abs(baseline) if baseline else math.copysign(SATURATION, diff) if diff else 0.0
    sign = 1.0 if higher_is_better(metric) else -1.0
    return float(np.clip(sign * relative / SATURATION, -1, 1))


def _label(metric: str) -> str:
    return metric_spec(metric).label or metric


# the paired tests' names as a reader knows them (careval.analysis.statistics.comparisons)
TEST_NAMES = {
    "mcnemar_exact": "McNemar exact",
    "permutation_exact": "sign-flip exact",
    "permutation_monte_carlo": "sign-flip (Monte Carlo)",
    "two_level_bootstrap": "two-level bootstrap",
}


def _number(value) -> str:
    """3 significant digits; never "-0" (a value that rounds to zero reads 0)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    text = f"{value:.3g}"
    return "0" if float(text) == 0 else text


def _signed(value) -> str:
    text = _number(value)
    return text if text in ("n/a", "0") or text.startswith("-") else f"+{text}"


def _interval(value, low, high) -> str:
    return f"{_number(value)} [{_number(low)}, {_number(high)}]"


def _cell_text(row: dict, alpha: float) -> str:
    """What was tested: the test and n; the variant's and the baseline's values with their intervals; the difference
    with its interval and Holm's p (a star below alpha), or, where the test over n samples cannot reach alpha
    (its smallest p above it), that instead of a p. Where no sample was scored under both: how many failed."""
    if not row["n"]:
        return f"no pairs\n({row['n_dropped']} failed)"
    test = f"{TEST_NAMES.get(row['test'], row['test'])}, n={row['n']}"
    values = (
        f"variant {_interval(row['value'], row.get('value_low'), row.get('value_high'))}\n"
        f"baseline {_interval(row['baseline_value'], row.get('baseline_low'), row.get('baseline_high'))}"
    )
    diff = f"diff {_signed(row['diff'])} [{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]"
    p, smallest = row["p_holm"], row.get("min_p")
    if smallest is not None and math.isfinite(smallest) and smallest > alpha:
        verdict = f"n too small for p<{alpha:g} (min p {smallest:.2g})"
    elif p is None or not math.isfinite(p):
        verdict = "no p"
    else:
        verdict = f"p Holm={p:.2g}" + (" *" if p < alpha else "")
    return f"{test}\n{values}\n{diff}\n{verdict}"


def _baselines(page: StudyPage) -> str:
    variants = set(page.baselines.values())
    if len(variants) == 1:
        return f"baseline (the run's own setting) of every model: {next(iter(variants))}"
    described = "; ".join(f"{page.labels.get(m, m)}: {v}" for m, v in page.baselines.items())
    return f"baselines (the run's own settings): {described}"


def study_grid(ax, rows: pl.DataFrame, page: StudyPage, alpha: float) -> None:
    """The grid of one study's rows (benchmark x metric x variant by model, then Kendall's tau)."""
    models = list(page.baselines)
    keys = rows.select("benchmark", "metric", "variant").unique(maintain_order=True).rows()
    grid = np.full((len(keys), len(models)), np.nan)
    at = {key: i for i, key in enumerate(keys)}
    font = 6 if len(keys) <= 40 else 5
    for row in rows.iter_rows(named=True):
        i, j = at[(row["benchmark"], row["metric"], row["variant"])], models.index(row["model"])
        grid[i, j] = _colour(row["diff"], row["baseline_value"], row["metric"])
        ax.text(j, i, _cell_text(row, alpha), ha="center", va="center", fontsize=font)
    taus = rows.group_by("benchmark", "metric", "variant", maintain_order=True).agg(
        pl.col("kendall_tau").first(), pl.col("n_ranked").first()
    )
    for benchmark, metric, variant, tau, ranked in taus.iter_rows():
        # tau only where >= 3 models are ranked and the study changed one (careval.analysis.studies.tables.kendall)
        text = f"{tau:.2f} ({ranked})" if tau is not None and math.isfinite(tau) else f"- ({ranked})"
        ax.text(len(models), at[(benchmark, metric, variant)], text, ha="center", va="center", fontsize=font)
    ax.imshow(np.hstack([grid, np.full((len(keys), 1), np.nan)]), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(models) + 1))
    ax.set_xticklabels([page.labels.get(m, m) for m in models] + ["Kendall's tau\n(models)"], fontsize=7, rotation=20)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"{b} · {_label(m)} · {v}" for b, m, v in keys], fontsize=font)
    for i in range(1, len(keys)):  # a line between benchmarks
        if keys[i][0] != keys[i - 1][0]:
            ax.axhline(i - 0.5, color="black", linewidth=0.8)
    ax.axvline(len(models) - 0.5, color="black", linewidth=0.8)


def variance_panel(ax, samples: pl.DataFrame, page: StudyPage, metrics: list[str]) -> None:
    """Figure 13 per variant: each metric's per-sample variance over rephrasings (mean over runs, then over models),
    scaled by the metric's largest such value over the variants."""
    variants = [*page.variants, *(["baseline"] if "baseline" in set(samples["variant"]) else [])]
    valued = samples.filter((pl.col("status") == "ok") & pl.col("metric").is_in(metrics))
    means = valued.group_by("variant", "benchmark", "metric", "id").agg(pl.col("value").mean())
    width = 0.8 / max(len(variants), 1)
    colours = plt.get_cmap("tab10")
    for k, variant in enumerate(variants):
        data = []
        for metric in metrics:
            column = means.filter(pl.col("metric") == metric)
            top = column["value"].max()
            values = column.filter(pl.col("variant") == variant)["value"].to_numpy()
            data.append(values / top if top else values)
        positions = np.arange(len(metrics)) + (k - (len(variants) - 1) / 2) * width
        parts = ax.boxplot(data, positions=positions, widths=width * 0.9, patch_artist=True, showfliers=False)
        for box in parts["boxes"]:
            box.set_facecolor(colours(k % 10))
        ax.plot([], [], color=colours(k % 10), linewidth=6, label=variant)
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(
        [_label(m.removesuffix(REPHRASE_VARIANCE)) for m in metrics], rotation=30, ha="right", fontsize=7
    )
    ax.set_ylabel("variance over rephrasings\n(mean over runs and models; / its max)", fontsize=8)
    # the values are divided by their max (<= 1): the legend sits in the headroom above them, never on a box
    ax.set_ylim(top=1.1 + 0.12 * len(variants))
    ax.legend(fontsize=7, loc="upper right")


def study_figure(rows: pl.DataFrame | None, samples: pl.DataFrame | None, page: StudyPage, view, alpha: float):
    """A study's page: its grid, and for a study of the resilience analysis the variances' distributions."""
    title = f"Study '{page.name}' ({page.section})"
    if rows is None or samples is None or rows.filter(pl.col("study") == page.name).is_empty():
        return empty_page(title, "no variant was compared with a baseline (no shared samples)")
    family = page.section.split(".", 1)[1] if page.section.startswith("metrics.") else None
    shown = shown_metrics(samples, view, family).select("benchmark", "metric")
    own = rows.filter(pl.col("study") == page.name).join(shown, on=["benchmark", "metric"], how="semi")
    keys = own.select("benchmark", "metric", "variant").unique().rows()
    analysis = page.kind == "analysis"
    metrics = shown.filter(pl.col("metric").str.ends_with(REPHRASE_VARIANCE))["metric"].unique(maintain_order=True)
    # inches: the grid's rows, figure 13's panel, the header, the model names under the grid, the note
    heights = [0.8 * len(keys) + 0.3] + ([3.0] if analysis and len(metrics) else [])  # five lines a cell; figure 13's
    label_inches = 0.075 * max((len(f"{b} · {_label(m)} · {v}") for b, m, v in keys), default=20) + 0.3
    width = max(8.0, label_inches + 2.6 * len(page.baselines) + 1.0 + 0.5)
    chars = int(width * 13)
    description = textwrap.fill(page.description, chars) + "\n" if page.description else ""
    header = f"{title}\n{description}{textwrap.fill(_baselines(page), chars)}"
    note = (
        "cell: the paired test and n (samples both scored); the variant's value vs the baseline's, each with its "
        "paired-bootstrap percentile interval; their difference (variant - baseline, the metric's unit) with "
        f"its interval; Holm's p within the study (* below {alpha:g}), or, where even the most extreme outcome over n "
        f"samples gives a p above {alpha:g}, that n is too small. Colour: relative change, blue better / red worse "
        f"(saturated at {SATURATION:.0%}). Kendall's tau (models ranked) of the models' ranking under the variant vs "
        "the baseline, the models the study leaves alone at their own values; '-' where fewer than 3 are ranked or "
        "none changed."
    )
    note = textwrap.fill(note, int(width * 17))
    header_inches, names_inches = 0.25 + 0.17 * (header.count("\n") + 1), 1.0
    note_inches = 0.15 + 0.1 * (note.count("\n") + 1)
    gaps = names_inches * (len(heights) - 1)
    height = sum(heights) + header_inches + names_inches + note_inches + gaps
    fig, axes = plt.subplots(
        len(heights), 1, figsize=(width, height), gridspec_kw={"height_ratios": heights}, squeeze=False
    )
    fig.subplots_adjust(
        left=label_inches / width,
        right=1 - 0.3 / width,
        top=1 - header_inches / height,
        bottom=(names_inches + note_inches) / height,
        hspace=names_inches / (sum(heights) / len(heights)),
    )
    study_grid(axes[0, 0], own, page, alpha)
    if analysis and len(metrics):
        variance_panel(axes[1, 0], samples, page, metrics.to_list())
    fig.suptitle(header, fontsize=9)
    fig.text(0.01, 0.005, note, fontsize=6, va="bottom")
    return fig


def table6_figure(table: pl.DataFrame | None):
    """Paper Table 6 as a page: question, statements, benchmark, then each model's [must have, nice to have]."""
    title = "Table 6: Relaxed Cross-Entropy of example questions [Must_have, Nice_to_have]"
    if table is None or table.is_empty():
        return empty_page(title, "no example question was scored")
    labels = [c.removesuffix("/must_have") for c in table.columns if c.endswith("/must_have")]

    def pair(row: dict, label: str) -> str:
        values = [row[f"{label}/{part}"] for part in ("must_have", "nice_to_have")]
        return "[" + ", ".join("n/a" if v is None or not math.isfinite(v) else f"{v:.3f}" for v in values) + "]"

    cells = [
        [
            textwrap.fill(str(row[k] or ""), width)
            for k, width in (("question", 48), ("must_have", 24), ("nice_to_have", 24))
        ]
        + [row["benchmark"]]
        + [pair(row, label) for label in labels]
        for row in table.iter_rows(named=True)
    ]
    header = ["Question", "Must have", "Nice to have", "Benchmark", *(textwrap.fill(label, 18) for label in labels)]
    # the paper's layout: each column as wide as its longest line (the question widest), each row as tall as its
    # most wrapped cell, so no text runs past its cell
    rows_lines = [max(cell.count("\n") + 1 for cell in row) for row in [header, *cells]]
    chars = [max(len(line) for row in [header, *cells] for line in row[k].split("\n")) + 2 for k in range(len(header))]
    inch_per_char, inch_per_line = 0.075, 0.16  # fontsize 7
    width = sum(chars) * inch_per_char + 0.4
    height = sum(rows_lines) * inch_per_line + 0.12 * len(rows_lines) + 1.0
    fig, ax = plt.subplots(figsize=(max(width, 8), height))
    ax.axis("off")
    fig.subplots_adjust(
        left=0.2 / max(width, 8), right=1 - 0.2 / max(width, 8), top=1 - 0.5 / height, bottom=0.4 / height
    )
    total_lines = sum(rows_lines) * inch_per_line + 0.12 * len(rows_lines)
    tab = ax.table(
        cellText=cells,
        colLabels=header,
        loc="upper center",
        cellLoc="left",
        colWidths=[c * inch_per_char / (max(width, 8) - 0.4) for c in chars],
    )
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    for (row, _), cell in tab.get_celld().items():
        cell.set_height((rows_lines[row] * inch_per_line + 0.12) / total_lines)
    ax.set_title(title, fontsize=10)
    fig.text(0.01, 0.01, "Files: results/tables/table6_relaxed_perplexity_examples.csv / .md / .tex", fontsize=7)
    return fig
