"""Model rankings per metric, by hand: 1 is best, perplexity ranks low values first, ties share a rank."""

import polars as pl

from careval.analysis.statistics.rankings import rank_models
from careval.schemas import SUMMARY_SCHEMA


def test_ranks_by_hand():
    values = {
        ("rouge1", "m1"): 0.3,
        ("rouge1", "m2"): 0.5,
        ("rouge1", "m3"): 0.5,
        ("rouge1", "m4"): float("nan"),
        ("word_perplexity", "m1"): 10.0,
        ("word_perplexity", "m2"): 30.0,
        ("word_perplexity", "m3"): 20.0,
        ("word_perplexity", "m4"): 25.0,
    }
    summary = pl.DataFrame(
        [
            {"model": m, "benchmark": "qa", "task": "open", "metric": metric, "value": v, "n": 3, "n_failed": 0}
            for (metric, m), v in values.items()
        ],
        schema=SUMMARY_SCHEMA,
    )
    ranks = {
        (metric, m): r for metric, m, r in rank_models(summary, "qa").select("metric", "model", "rank").iter_rows()
    }
    assert ranks == {
        ("rouge1", "m1"): 3,
        ("rouge1", "m2"): 1,
        ("rouge1", "m3"): 1,
        ("rouge1", "m4"): None,
        ("word_perplexity", "m1"): 1,
        ("word_perplexity", "m2"): 4,
        ("word_perplexity", "m3"): 2,
        ("word_perplexity", "m4"): 3,
    }


def _ranks_of(values: dict[str, float], metric: str) -> dict[str, int]:
    summary = pl.DataFrame(
        [
            {"model": m, "benchmark": "qa", "task": "open", "metric": metric, "value": v, "n": 3, "n_failed": 0}
            for m, v in values.items()
        ],
        schema=SUMMARY_SCHEMA,
    )
    return dict(rank_models(summary, "qa").select("model", "rank").iter_rows())


def test_a_lower_relaxed_cross_entropy_ranks_first():
    # the old substring rule ("perplexity", "bits_per_byte") ranked this metric higher-is-better
    assert _ranks_of({"m1": 7.5, "m2": 2.0, "m3": 4.0}, "relaxed_cross_entropy") == {"m1": 3, "m2": 1, "m3": 2}


def test_direction_comes_from_the_registry_for_each_family():
    values = {"m1": 2.0, "m2": 4.0, "m3": 3.0}
    lower_first, higher_first = {"m1": 1, "m2": 3, "m3": 2}, {"m1": 3, "m2": 1, "m3": 2}
    for metric in ("bits_per_byte", "relaxed_perplexity", "byte_perplexity_given_question"):
        assert _ranks_of(values, metric) == lower_first, metric
    for metric in ("judge_helpfulness", "bleurt", "moverscore", "f1radgraph_partial"):
        assert _ranks_of(values, metric) == higher_first, metric
