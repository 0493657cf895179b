"""Hierarchical clustering finds and names the obvious blocks of a constructed correlation matrix."""
import numpy as np

from careval.analysis.clusters import cluster_metrics, metric_category

NAMES = ["rouge1", "word_perplexity", "bleu", "prometheus_score", "bits_per_byte", "bertscore_f1", "byte_perplexity"]
BLOCKS = {"n-gram": ["rouge1", "bleu", "bertscore_f1"], "perplexity": ["word_perplexity", "bits_per_byte", "byte_perplexity"],
          "judge": ["prometheus_score"]}


def _matrix():
    r = np.full((len(NAMES), len(NAMES)), -0.3)
    for members, within in ((BLOCKS["n-gram"], 0.9), (BLOCKS["perplexity"], 0.97)):
        for a in members:
            for b in members:
                r[NAMES.index(a), NAMES.index(b)] = within
    r[NAMES.index("prometheus_score"), :] = r[:, NAMES.index("prometheus_score")] = 0.1
    np.fill_diagonal(r, 1.0)
    return r


def test_three_named_clusters():
    clusters = {c.name: set(c.members) for c in cluster_metrics(NAMES, _matrix(), min_correlation=0.7)}
    assert clusters == {"n-gram + semantic": set(BLOCKS["n-gram"]), "perplexity": set(BLOCKS["perplexity"]),
                        "llm-judge": {"prometheus_score"}}


def test_a_low_threshold_merges_and_undefined_counts_as_no_agreement():
    r = _matrix()
    merged = cluster_metrics(NAMES, r, min_correlation=-0.5)
    assert len(merged) == 1 and set(merged[0].members) == set(NAMES)
    r[NAMES.index("rouge1"), :] = r[:, NAMES.index("rouge1")] = np.nan  # e.g. a constant metric
    r[NAMES.index("rouge1"), NAMES.index("rouge1")] = 1.0
    names = {c.members: c.name for c in cluster_metrics(NAMES, r, min_correlation=0.7)}
    assert ("rouge1",) in names and names[("rouge1",)] == "n-gram"


def test_categories_follow_the_paper():
    assert [metric_category(m) for m in ("relaxed_perplexity", "word_perplexity_given_question", "bleurt", "sacrebleu_corpus",
                                         "moverscore", "judge_score")] == [
        "relaxed perplexity", "perplexity", "semantic", "n-gram", "semantic", "llm-judge"]
