"""Model rankings per metric, by hand: 1 is best, perplexity ranks low values first, ties share a rank."""
import polars as pl

from careval.analysis.rankings import rank_models
from careval.schemas import SUMMARY_SCHEMA


def test_ranks_by_hand():
    values = {("rouge1", "m1"): 0.3, ("rouge1", "m2"): 0.5, ("rouge1", "m3"): 0.5, ("rouge1", "m4"): float("nan"),
              ("word_perplexity", "m1"): 10.0, ("word_perplexity", "m2"): 30.0, ("word_perplexity", "m3"): 20.0,
              ("word_perplexity", "m4"): 25.0}
    summary = pl.DataFrame([{"model": m, "benchmark": "qa", "task": "open", "metric": metric, "value": v, "n": 3,
                             "n_failed": 0} for (metric, m), v in values.items()], schema=SUMMARY_SCHEMA)
    ranks = {(metric, m): r for metric, m, r in rank_models(summary, "qa").select("metric", "model", "rank").iter_rows()}
    assert ranks == {("rouge1", "m1"): 3, ("rouge1", "m2"): 1, ("rouge1", "m3"): 1, ("rouge1", "m4"): None,
                     ("word_perplexity", "m1"): 1, ("word_perplexity", "m2"): 4, ("word_perplexity", "m3"): 2,
                     ("word_perplexity", "m4"): 3}
