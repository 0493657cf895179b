"""The metric registry resolves every name careval's scorers write, and refuses to guess."""

from __future__ import annotations

import pytest

from careval.metrics.registry import FAMILIES, METRICS, TASK_FAMILIES, UnknownMetricError, metric_spec


@pytest.mark.parametrize(
    ("name", "family", "higher", "bounded"),
    [
        ("acc", "accuracy", True, True),
        ("rougeL", "rouge", True, True),
        ("bleurt", "bleurt", True, False),
        ("word_perplexity", "perplexity", False, False),
        ("bits_per_byte_given_question", "perplexity", False, False),
        ("relaxed_cross_entropy", "relaxed_perplexity", False, False),
        ("judge_helpfulness", "judge", True, True),
        ("judge_helpfulness_expected", "judge", True, True),
        ("f1radgraph_partial", "radgraph", True, True),
    ],
)
def test_names_resolve_to_their_family_direction_and_range(name, family, higher, bounded):
    spec = metric_spec(name)
    assert (spec.family, spec.higher_is_better, spec.bounded) == (family, higher, bounded)


def test_variants_given_the_question_keep_the_base_metric_facts():
    base, variant = metric_spec("word_perplexity"), metric_spec("word_perplexity_given_question")
    assert (variant.higher_is_better, variant.bounds, variant.average) == (
        base.higher_is_better,
        base.bounds,
        "geometric",
    )


def test_judge_expected_scores_are_one_to_five_with_the_rubric_in_the_label():
    spec = metric_spec("judge_factual_validity_expected")
    assert (spec.bounds, spec.label, spec.category) == ((1.0, 5.0), "judge: factual_validity (expected)", "llm-judge")
    assert metric_spec("judge_factual_validity").label == "judge: factual_validity"


def test_an_unknown_metric_is_an_error_not_a_guess():
    with pytest.raises(UnknownMetricError, match="metric 'perplexity_of_sorts' is not in careval's metric registry"):
        metric_spec("perplexity_of_sorts")
    with pytest.raises(UnknownMetricError):
        metric_spec("rouge3_given_question")


def test_every_family_of_every_task_is_registered_and_writes_a_metric():
    for task, families in TASK_FAMILIES.items():
        for family in families:
            assert family in FAMILIES, (task, family)
    written = {spec.family for spec in METRICS.values()} | {"judge", "radgraph"}
    assert set(FAMILIES) == written


def test_averages_reproduce_lm_evals_corpus_values():
    # perplexities: exp of the weighted mean log; bits per byte (already a log) and cross-entropy: arithmetic
    assert [
        metric_spec(m).average
        for m in ("word_perplexity", "byte_perplexity", "relaxed_perplexity", "bits_per_byte", "relaxed_cross_entropy")
    ] == ["geometric", "geometric", "geometric", "mean", "mean"]
