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
    # the judge's, F1-RadGraph's and lm-eval's metric names are resolved by metric_spec's patterns
    written = {spec.family for spec in METRICS.values()} | {"judge", "radgraph", "lm_eval"}
    assert set(FAMILIES) == written


def test_lm_eval_metrics_keep_lm_evals_names_unless_careval_has_another_metric_by_it():
    from careval.metrics.registry import lm_eval_metric_name

    # careval's accuracy and rolling perplexities are lm-eval's (an lm-eval MCQA task enters the MCQA average)
    assert [lm_eval_metric_name(m, "none") for m in ("acc", "acc_norm", "word_perplexity", "exact_match")] == [
        "acc",
        "acc_norm",
        "word_perplexity",
        "exact_match",
    ]
    # careval's bleu is evaluate's per-sample BLEU (0-1), lm-eval's a corpus sacreBLEU (0-100): lm-eval's results key
    assert lm_eval_metric_name("bleu", "none") == "bleu,none"
    assert lm_eval_metric_name("exact_match", "strict-match") == "exact_match,strict-match"
    assert (metric_spec("bleu,none").bounds, metric_spec("bleu").bounds) == ((0.0, 100.0), (0.0, 1.0))
    spec = metric_spec("exact_match,flexible-extract")
    assert (spec.family, spec.higher_is_better, spec.label) == ("lm_eval", True, "exact match [flexible-extract]")
    assert metric_spec("perplexity").average == "geometric" and not metric_spec("ter").higher_is_better


def test_averages_reproduce_lm_evals_corpus_values():
    # perplexities: exp of the weighted mean log; bits per byte (already a log) and cross-entropy: arithmetic
    assert [
        metric_spec(m).average
        for m in ("word_perplexity", "byte_perplexity", "relaxed_perplexity", "bits_per_byte", "relaxed_cross_entropy")
    ] == ["geometric", "geometric", "geometric", "mean", "mean"]


def _schema_section(family: str) -> dict | None:
    from careval.config import load_schema

    return load_schema()["properties"]["metrics"]["properties"].get(family)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_familys_config_keys_are_exactly_its_schema_section(family):
    """options + execution_options + plan_options are the keys of metrics.<family>, none twice: registry and
    schema cannot drift (a family without a section reads no option)."""
    spec = FAMILIES[family]
    section = _schema_section(family)
    keys = spec.options + spec.execution_options + spec.plan_options
    assert len(set(keys)) == len(keys)
    assert set(keys) == set((section or {}).get("properties", {}))
    # a jury's keys (careval.metrics.jury, careval.jobs.jury_report) are read by the plan, never by a scorer
    jury = {"models", "aggregate", "same_family", "length_bias_flag", "one_grade_flag"}
    assert set(spec.plan_options) <= {"benchmarks", "model"} | jury


def test_the_schema_has_a_section_only_for_registered_families():
    from careval.config import load_schema

    sections = set(load_schema()["properties"]["metrics"]["properties"]) - {"skip"}
    assert sections <= set(FAMILIES)


def test_metrics_skip_accepts_exactly_the_registered_families():
    from careval.config import load_schema

    skip = load_schema()["properties"]["metrics"]["properties"]["skip"]
    assert skip["items"]["enum"] == list(FAMILIES)


def test_every_metric_is_listed_by_its_own_family():
    for name, spec in METRICS.items():
        assert spec in FAMILIES[spec.family].metrics, name


def test_only_llm_families_have_no_scorer_and_every_scorer_resolves():
    import inspect

    for name, family in FAMILIES.items():
        if family.job == "llm":
            assert family.scorer is None, name
            with pytest.raises(ValueError, match="job of its own"):
                family.scoring_function()
            continue
        function = family.scoring_function()
        assert list(inspect.signature(function).parameters) == [
            "samples",
            "generations",
            "logliks",
            "options",
            "min_chars",
        ], name


@pytest.mark.parametrize("family", [name for name, f in FAMILIES.items() if f.job != "llm"])
def test_family_scores_reaches_every_scored_familys_function(monkeypatch, family):
    """Dispatch goes through the registry to the family's own scorer, with the schema's defaults filled in."""
    import importlib

    from careval import scoring
    from careval.config import with_schema_defaults

    module, _, function = FAMILIES[family].scorer.partition(":")
    calls = []
    sentinel = object()

    def fake(samples, generations, logliks, options, min_chars):
        calls.append((samples, generations, logliks, options, min_chars))
        return sentinel

    monkeypatch.setattr(importlib.import_module(module), function, fake)
    assert scoring.family_scores(family, "S", "G", "L", {}, 7) is sentinel
    expected = with_schema_defaults({}, f"metrics.{family}") if _schema_section(family) else {}
    assert calls == [("S", "G", "L", expected, 7)]


@pytest.mark.parametrize("family", ["judge", "relaxed_perplexity", "no_such_family"])
def test_family_scores_refuses_a_family_it_does_not_compute(family):
    from careval import scoring

    with pytest.raises(ValueError, match=family):
        scoring.family_scores(family, None, None, None, {"model": "x"})


def test_value_options_keep_only_what_changes_a_value():
    assert FAMILIES["bleurt"].value_options({"model": "m", "batch_size": 4, "device": "cuda", "max_length": 8}) == {
        "model": "m",
        "max_length": 8,
    }


def test_a_jury_judges_metric_has_its_jury_metrics_facts():
    from careval.metrics.registry import metric_spec

    grade, expected = metric_spec("judge_helpfulness@prometheus"), metric_spec("judge_helpfulness_expected@prometheus")
    assert (grade.family, grade.higher_is_better, grade.bounds) == ("judge", True, (1.0, 5.0))
    assert grade.label == "judge: helpfulness [prometheus]"
    assert expected.label == "judge: helpfulness (expected) [prometheus]"
