"""The jury's pages of the analysis report: the jury beside its judges, their agreement, their biases, the jury's
stability, and which metrics agree with people. They only draw tables written before (careval.jobs.jury_report)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from careval.analysis.figures.text_pages import empty_page
from careval.metrics.jury import judge_metric, split_judge
from careval.metrics.registry import JUDGE_EXPECTED_SUFFIX, JUDGE_PREFIX

JURY_COLOUR = "black"


def _ci(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Error-bar lengths below and above each value (0 where there is no interval)."""
    value = frame["value"].to_numpy().astype(float)
    low = frame["ci_low"].fill_null(float("nan")).to_numpy().astype(float)
    high = frame["ci_high"].fill_null(float("nan")).to_numpy().astype(float)
    below = np.where(np.isfinite(low), np.clip(value - low, 0, None), 0)
    above = np.where(np.isfinite(high), np.clip(high - value, 0, None), 0)
    return np.nan_to_num(below), np.nan_to_num(above)


def _undefined(ax, values: np.ndarray) -> None:
    """Marks each bar without a value "n/a" at the axis (constant grades have no rank correlation; a judge without
    another judge's grades beside its own has no self-preference), so that an empty bar never reads as 0."""
    for i in np.flatnonzero(~np.isfinite(values)):
        ax.text(0, i, " n/a", va="center", ha="left", fontsize=6.5, color="dimgrey")


def _rubrics_of(metrics: list[str]) -> list[str]:
    names = {split_judge(m)[0] for m in metrics if m.startswith(JUDGE_PREFIX)}
    return sorted(n[len(JUDGE_PREFIX) :] for n in names if not n.endswith(JUDGE_EXPECTED_SUFFIX))


def jury_figure(summary: pl.DataFrame, benchmark: str):
    """Each model's mean grade per rubric: the jury's (judge_<rubric>) beside each judge's (judge_<rubric>@<judge>)."""
    block = summary.filter((pl.col("benchmark") == benchmark) & pl.col("metric").str.starts_with(JUDGE_PREFIX))
    rubrics = _rubrics_of(block["metric"].to_list())
    if not rubrics:
        return empty_page(f"Judge jury on {benchmark}", "no judge grades in results/summary/scores.parquet")
    judges = sorted({j for _, j in map(split_judge, block["metric"].to_list()) if j})
    models = sorted(block["model"].unique().to_list())
    raters = ["jury", *judges]
    fig, axes = plt.subplots(1, len(rubrics), figsize=(max(8, 4.2 * len(rubrics)), 4.6), squeeze=False)
    width = 0.8 / len(raters)
    for ax, rubric in zip(axes[0], rubrics):
        jury_metric = JUDGE_PREFIX + rubric
        for r, rater in enumerate(raters):
            metric = jury_metric if rater == "jury" else judge_metric(jury_metric, rater)
            values = dict(block.filter(pl.col("metric") == metric).select("model", "value").iter_rows())
            ax.bar(
                np.arange(len(models)) + (r - (len(raters) - 1) / 2) * width,
                [values.get(m) if values.get(m) is not None else np.nan for m in models],
                width,
                label=rater,
                color=JURY_COLOUR if rater == "jury" else None,
            )
        ax.set_xticks(range(len(models)), models, rotation=20, ha="right", fontsize=7)
        ax.set_ylim(0, 5.2)
        ax.set_ylabel("mean grade (1-5)", fontsize=8)
        ax.set_title(rubric, fontsize=9)
    # below the panels: the bars reach the top of the 1-5 scale, so no place inside is free of them
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="lower center", ncol=len(names), frameon=False)
    fig.suptitle(
        f"Judge jury on {benchmark}: each model's mean grade, the jury's (black) and each judge's", fontsize=10
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def judge_agreement_figure(table: pl.DataFrame, benchmark: str):
    """Every agreement statistic per rubric with its bootstrap interval (results/summary/judge_agreement.parquet)."""
    block = table.filter(pl.col("benchmark") == benchmark)
    if block.is_empty():
        return empty_page(f"Agreement between judges on {benchmark}", "fewer than two judges: no agreement to measure")
    rubrics = block["rubric"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(
        1, len(rubrics), figsize=(max(8, 5.2 * len(rubrics)), 1.6 + 0.42 * block.height / len(rubrics)), squeeze=False
    )
    for ax, rubric in zip(axes[0], rubrics):
        rows = block.filter(pl.col("rubric") == rubric)
        labels = [
            f"{s}\n({j}, n={n})" if " | " in j and s in ("quadratic_kappa", "kendall_tau_ranking") else f"{s} (n={n})"
            for s, j, n in rows.select("statistic", "judges", "n").iter_rows()
        ]
        y = np.arange(rows.height)[::-1]
        below, above = _ci(rows)
        ax.errorbar(rows["value"].to_numpy().astype(float), y, xerr=[below, above], fmt="o", capsize=3)
        for yi, value in zip(y, rows["value"].to_list()):
            if value is not None and math.isfinite(value):
                ax.annotate(
                    f"{value:.2f}", (value, yi), textcoords="offset points", xytext=(0, 6), fontsize=7, ha="center"
                )
            else:
                ax.annotate("n/a", (0, yi), fontsize=7, ha="center")
        ax.axvline(0, color="grey", lw=0.6)
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-0.6, rows.height - 0.1)  # room above the top row for its value's label
        ax.set_yticks(y, labels, fontsize=6.5)
        ax.set_title(rubric, fontsize=9)
        ax.set_xlabel("value (1 = perfect agreement)", fontsize=8)
    judges = block["judges"].to_list()[0]
    fig.suptitle(f"Agreement between judges on {benchmark} ({judges}); bars: bootstrap 95% CI over samples", fontsize=9)
    fig.tight_layout()
    return fig


def judge_bias_figure(table: pl.DataFrame, benchmark: str):
    """Length bias, self-preference and grade distribution per judge and rubric (results/summary/judge_bias.parquet)."""
    block = table.filter(pl.col("benchmark") == benchmark)
    if block.is_empty():
        return empty_page(f"Judge bias checks on {benchmark}", "no judge grades")
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    length = block.filter(pl.col("check") == "length_spearman")
    labels = [f"{j}\n{r}" for j, r in length.select("judge", "rubric").iter_rows()]
    below, above = _ci(length)
    values = length["value"].fill_null(float("nan")).to_numpy().astype(float)
    colours = ["tab:red" if f else "tab:blue" for f in length["flagged"].fill_null(False).to_list()]
    axes[0].barh(range(length.height), np.nan_to_num(values), xerr=[below, above], color=colours, capsize=3)
    _undefined(axes[0], values)
    axes[0].set_yticks(range(length.height), labels, fontsize=6.5)
    axes[0].set_xlim(-1.05, 1.05)
    axes[0].axvline(0, color="grey", lw=0.6)
    axes[0].set_title("length bias: Spearman(grade, answer tokens)\nred: flagged", fontsize=8)
    preference = block.filter(pl.col("check") == "self_preference")
    if preference.is_empty():
        axes[1].axis("off")
        # a judge's grades of its own family's answers are compared with the other judges': one judge has none
        why = (
            "needs two judges: a judge's grades of its own answers\nare compared with the other judges' "
            "(metrics.judge.models has one)"
            if block["judge"].n_unique() < 2
            else "no judge is an evaluated model\n(metrics.judge.same_family)"
        )
        axes[1].text(0.5, 0.5, why, ha="center", fontsize=8)
    else:
        labels = [f"{j} on {m}\n{r}" for j, m, r in preference.select("judge", "model", "rubric").iter_rows()]
        below, above = _ci(preference)
        values = preference["value"].fill_null(float("nan")).to_numpy().astype(float)
        axes[1].barh(
            range(preference.height), np.nan_to_num(values), xerr=[below, above], color="tab:purple", capsize=3
        )
        _undefined(axes[1], values)
        axes[1].set_yticks(range(preference.height), labels, fontsize=6.5)
        axes[1].axvline(0, color="grey", lw=0.6)
        axes[1].set_xlabel("own grade - other judges' grade (points)", fontsize=7)
    axes[1].set_title("self-preference", fontsize=8)
    shares = block.filter(pl.col("check").str.starts_with("share_grade_"))
    groups = shares.select("judge", "rubric").unique(maintain_order=True)
    modal = block.filter(pl.col("check") == "modal_grade_share")
    flagged = {(j, r): f for j, r, f in modal.select("judge", "rubric", "flagged").iter_rows()}
    left = np.zeros(groups.height)
    cmap = plt.get_cmap("viridis", 5)
    for g in range(1, 6):
        part = (
            groups.join(
                shares.filter(pl.col("check") == f"share_grade_{g}"),
                on=["judge", "rubric"],
                how="left",
                maintain_order="left",
            )["value"]
            .fill_null(0.0)
            .fill_nan(0.0)
            .to_numpy()
        )
        axes[2].barh(range(groups.height), part, left=left, color=cmap(g - 1), label=f"grade {g}")
        left += part
    axes[2].set_yticks(
        range(groups.height),
        [f"{j}\n{r}{' (FLAGGED)' if flagged.get((j, r)) else ''}" for j, r in groups.iter_rows()],
        fontsize=6.5,
    )
    axes[2].set_xlim(0, 1)
    axes[2].legend(fontsize=6, loc="lower right", ncol=5, bbox_to_anchor=(1.0, -0.2))
    axes[2].set_title("grade distribution\nflagged: one grade for most answers", fontsize=8)
    fig.suptitle(f"Judge bias checks on {benchmark} (bars: bootstrap 95% CI over samples)", fontsize=10)
    fig.tight_layout()
    return fig


def jury_stability_figure(table: pl.DataFrame, benchmark: str):
    """Mean scaled variance under rephrasing (resilience) and resampling (consistency): jury vs each judge."""
    block = table.filter(pl.col("benchmark") == benchmark)
    if block.is_empty():
        return empty_page(f"Jury stability on {benchmark}", "no judged repeats")
    analyses = block["analysis"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, len(analyses), figsize=(max(8, 6 * len(analyses)), 4.6), squeeze=False)
    for ax, analysis in zip(axes[0], analyses):
        rows = block.filter(pl.col("analysis") == analysis)
        groups = rows.select("rubric", "kind").unique(maintain_order=True)
        raters = ["jury", *sorted(r for r in rows["rater"].unique().to_list() if r != "jury")]
        width = 0.8 / len(raters)
        for r, rater in enumerate(raters):
            values = {
                (ru, k): v
                for ru, k, v in rows.filter(pl.col("rater") == rater)
                .select("rubric", "kind", "mean_scaled_variance")
                .iter_rows()
            }
            ax.bar(
                np.arange(groups.height) + (r - (len(raters) - 1) / 2) * width,
                [values.get(g, np.nan) for g in groups.iter_rows()],
                width,
                label=rater,
                color=JURY_COLOUR if rater == "jury" else None,
            )
        ax.set_xticks(range(groups.height), [f"{ru}\n({k})" for ru, k in groups.iter_rows()], fontsize=7)
        # figure 13's scaling (can exceed 1 where the smallest variance is above 0): the axis says the division
        ax.set_ylabel("mean variance / (max - min of the\nmetric's variances; lower = steadier)", fontsize=8)
        ax.set_title(
            {"resilience": "under rephrasing (resilience)", "consistency": "under resampling (self-consistency)"}.get(
                analysis, analysis
            ),
            fontsize=9,
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Does the jury move less than one judge? {benchmark}", fontsize=10)
    fig.tight_layout()
    return fig


def human_agreement_figure(metrics: pl.DataFrame, raters: pl.DataFrame):
    """Which metrics agree with people: each metric's Spearman with the raters' mean, per benchmark x criterion."""
    if metrics.is_empty():
        return empty_page("Which metrics agree with people", "no human ratings")
    rho = metrics.filter(pl.col("statistic") == "spearman")
    groups = rho.select("benchmark", "criterion").unique(maintain_order=True)
    tallest = max(
        rho.filter((pl.col("benchmark") == b) & (pl.col("criterion") == c)).height for b, c in groups.iter_rows()
    )
    # constrained layout: the judges' long labels (`judge_<rubric>_expected@<judge>`) get their width on every panel
    fig, axes = plt.subplots(
        1, groups.height, figsize=(max(9, 8 * groups.height), 2.6 + 0.26 * tallest), squeeze=False, layout="constrained"
    )
    for ax, (benchmark, criterion) in zip(axes[0], groups.iter_rows()):
        rows = rho.filter((pl.col("benchmark") == benchmark) & (pl.col("criterion") == criterion)).sort(
            pl.col("value").fill_nan(None), nulls_last=False
        )
        below, above = _ci(rows)
        colours = [
            (JURY_COLOUR if split_judge(m)[1] is None else "tab:orange") if m.startswith(JUDGE_PREFIX) else "tab:blue"
            for m in rows["metric"].to_list()
        ]
        ax.barh(
            range(rows.height),
            np.nan_to_num(rows["value"].fill_null(float("nan")).to_numpy().astype(float)),
            xerr=[below, above],
            color=colours,
            capsize=2,
        )
        ax.set_yticks(
            range(rows.height), [f"{m} (n={n})" for m, n in rows.select("metric", "n").iter_rows()], fontsize=6
        )
        ax.set_xlim(-1.05, 1.05)
        ax.axvline(0, color="grey", lw=0.6)
        ax.set_xlabel("Spearman with the raters' mean\n(sign flipped for lower-is-better metrics)", fontsize=7)
        own = raters.filter((pl.col("benchmark") == benchmark) & (pl.col("criterion") == criterion))
        summary = ", ".join(
            f"{s.replace('krippendorff_alpha_', 'alpha ')} {v:.2f}"
            if v is not None and math.isfinite(v)
            else f"{s} n/a"
            for s, v in own.select("statistic", "value").iter_rows()
        )
        for y, value in enumerate(rows["value"].to_list()):
            if value is None or not math.isfinite(value):
                ax.annotate("n/a", (0.02, y), fontsize=6, va="center")
        ax.set_title(f"{benchmark}, criterion {criterion}\nraters' own agreement:\n{summary}", fontsize=7.5)
    fig.suptitle(
        "Which metrics agree with people (black: the jury, orange: one judge, blue: other metrics; 95% bootstrap CI)",
        fontsize=9,
    )
    return fig
