"""A study's page says what was tested in every cell: the test and n, both arms' values with their intervals, the
difference and Holm's p; a cell whose n cannot reach alpha says so instead of a p."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from careval.analysis.figures.studies import study_figure
from careval.analysis.studies.tables import StudiesJob, StudyPage, StudySummary, smallest_p, study_rows
from careval.schemas import STUDY_SAMPLE_SCHEMA, SUMMARY_SAMPLE_SCHEMA

JOB = StudiesJob(studies=(), resamples=400, permutations=500, exact_limit=12, confidence=0.95, seed=3)


def _rows(model: str, variant: str, values) -> list[tuple]:
    return [(model, "b", "open", "rouge1", f"s{j:02d}", float(v), "ok", 1.0, variant) for j, v in enumerate(values)]


def _sign_flip_p(d: np.ndarray) -> float:
    """The two-sided exact sign-flip p, every flip enumerated."""
    flips = [abs(np.mean(np.array(signs) * d)) for signs in itertools.product((1, -1), repeat=len(d))]
    return float(np.mean(np.array(flips) >= abs(d.mean()) * (1 - 1e-12)))


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(4)
    few_base = np.array([0.1, 0.2, 0.3, 0.4])  # 4 samples: the exact test's smallest p is 2/16 = 0.125
    many_base = rng.uniform(0.2, 0.4, 12)
    records = _rows("few", "base", few_base) + _rows("few", "v1", few_base + 0.3)
    records += _rows("many", "base", many_base) + _rows("many", "v1", many_base + 0.2 + rng.normal(0, 0.01, 12))
    table = pl.DataFrame(records, schema=list(STUDY_SAMPLE_SCHEMA), orient="row").cast(STUDY_SAMPLE_SCHEMA)
    summary = StudySummary(name="s", variants=("v1",), baselines={"few": "base", "many": "base"}, kind="model")
    out = study_rows(table, summary, pl.DataFrame(schema=SUMMARY_SAMPLE_SCHEMA), JOB)
    return table, out, few_base, many_base


def test_the_smallest_p_is_what_the_most_extreme_outcome_gets(study):
    _, out, few_base, _ = study
    few = out.filter(pl.col("model") == "few").row(0, named=True)
    # every difference +0.3: the most extreme outcome over 4 samples, whose exact p is the smallest there is
    assert few["p_value"] == pytest.approx(_sign_flip_p(np.full(4, 0.3))) == pytest.approx(few["min_p"])
    assert smallest_p("permutation_exact", 4, 500) == 0.125 and smallest_p("mcnemar_exact", 6, 500) == 2 / 64
    assert (few["value"], few["baseline_value"]) == pytest.approx(((few_base + 0.3).mean(), few_base.mean()))
    assert few["value_low"] <= few["value"] <= few["value_high"]
    assert few["baseline_low"] <= few["baseline_value"] <= few["baseline_high"]


def test_each_cell_names_the_test_n_values_difference_and_holms_p_or_that_n_is_too_small(study):
    table, out, _, _ = study
    page = StudyPage(
        name="s",
        description="a fixture",
        section="model",
        kind="model",
        variants=("v1",),
        baselines={"few": "base", "many": "base"},
        labels={"few": "Few", "many": "Many"},
    )
    fig = study_figure(out, table, page, None, 0.05)
    texts = [t.get_text() for t in fig.axes[0].texts]
    few, many = (out.filter(pl.col("model") == m).row(0, named=True) for m in ("few", "many"))
    few_cell = next(t for t in texts if "n=4" in t)
    assert few_cell.startswith("sign-flip exact, n=4\n")
    assert f"\nvariant {few['value']:.3g} [{few['value_low']:.3g}, {few['value_high']:.3g}]\n" in few_cell
    assert f"\nbaseline {few['baseline_value']:.3g} [{few['baseline_low']:.3g}, " in few_cell
    assert f"diff +{few['diff']:.3g}" in few_cell
    assert few_cell.endswith("n too small for p<0.05 (min p 0.12)") and "Holm" not in few_cell
    many_cell = next(t for t in texts if "n=12" in t)
    assert many_cell.startswith("sign-flip exact, n=12\n")
    assert many_cell.endswith(f"p Holm={many['p_holm']:.2g} *")
    assert "-0" not in " ".join(texts).replace("-0.", "")  # no "-0" label
    assert "- (2)" in texts  # two models ranked: no Kendall's tau
