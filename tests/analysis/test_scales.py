"""Scales said: figure 13's axis names its division (a variance over max - min of a column whose smallest value is
above 0 exceeds 1), and a page says when its metrics rest on different numbers of samples."""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl

from careval.analysis.figures.paper import resilience_figure, sample_counts_note
from careval.analysis.statistics.spread import scale_variance
from careval.schemas import SPREAD_SCHEMA


def _spread() -> pl.DataFrame:
    # rouge1 over 3 samples, the judge over 1 (it grades fewer): variances 0.5, 1.0, 1.5 -> max - min = 1.0
    rows = [
        ("m", "b", f"s{i}", "rouge1", 4, 0.3, v, scale_variance(v, 1.0), None, None)
        for i, v in enumerate((0.5, 1, 1.5))
    ]
    rows.append(("m", "b", "s0", "judge_helpfulness", 4, 3.0, 2.0, 0.0, None, None))
    return pl.DataFrame(rows, schema=list(SPREAD_SCHEMA), orient="row").cast(SPREAD_SCHEMA)


def test_a_scaled_variance_above_1_is_possible_and_the_axis_says_what_it_is():
    spread = _spread()
    assert spread["scaled_variance"].max() == 1.5  # 1.5 / (1.5 - 0.5): the paper's division is not a 0-1 scale
    fig = resilience_figure(spread, "b", 3)
    assert fig.axes[0].get_ylabel() == "mean per sample of\nvariance / (max - min of the metric's variances)"
    notes = " ".join(" ".join(t.get_text().split()) for t in fig.texts)  # wrapped: one line
    assert "above 1 where a metric's smallest variance is above 0" in notes
    assert "samples per metric: 1: judge_helpfulness; 3: rouge1" in notes
    plt.close(fig)


def test_one_count_of_samples_needs_no_note():
    assert sample_counts_note(_spread().filter(pl.col("metric") == "rouge1")) == ""
