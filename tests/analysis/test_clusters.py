"""Hierarchical clustering finds and names the obvious blocks of a constructed correlation matrix."""

import numpy as np

from careval.analysis.statistics.clusters import cluster_metrics
from careval.metrics.registry import metric_category

NAMES = ["rouge1", "word_perplexity", "bleu", "judge_helpfulness", "bits_per_byte", "bertscore_f1", "byte_perplexity"]
BLOCKS = {
    "n-gram": ["rouge1", "bleu", "bertscore_f1"],
    "perplexity": ["word_perplexity", "bits_per_byte", "byte_perplexity"],
    "judge": ["judge_helpfulness"],
}


def _matrix():
    r = np.full((len(NAMES), len(NAMES)), -0.3)
    for members, within in ((BLOCKS["n-gram"], 0.9), (BLOCKS["perplexity"], 0.97)):
        for a in members:
            for b in members:
                r[NAMES.index(a), NAMES.index(b)] = within
    r[NAMES.index("judge_helpfulness"), :] = r[:, NAMES.index("judge_helpfulness")] = 0.1
    np.fill_diagonal(r, 1.0)
    return r


def test_three_named_clusters():
    clusters = {c.name: set(c.members) for c in cluster_metrics(NAMES, _matrix(), min_correlation=0.7)}
    assert clusters == {
        "n-gram + semantic": set(BLOCKS["n-gram"]),
        "perplexity": set(BLOCKS["perplexity"]),
        "llm-judge": {"judge_helpfulness"},
    }


def test_a_low_threshold_merges_and_undefined_counts_as_no_agreement():
    r = _matrix()
    merged = cluster_metrics(NAMES, r, min_correlation=-0.5)
    assert len(merged) == 1 and set(merged[0].members) == set(NAMES)
    r[NAMES.index("rouge1"), :] = r[:, NAMES.index("rouge1")] = np.nan  # e.g. a constant metric
    r[NAMES.index("rouge1"), NAMES.index("rouge1")] = 1.0
    names = {c.members: c.name for c in cluster_metrics(NAMES, r, min_correlation=0.7)}
    assert ("rouge1",) in names and names[("rouge1",)] == "n-gram"


def test_categories_follow_the_paper():
    assert [
        metric_category(m)
        for m in (
            "relaxed_perplexity",
            "word_perplexity_given_question",
            "bleurt",
            "sacrebleu_corpus",
            "moverscore",
            "judge_score",
        )
    ] == ["relaxed perplexity", "perplexity", "semantic", "n-gram", "semantic", "llm-judge"]


def _partition(labels, names):
    groups = {}
    for name, label in zip(names, labels):
        groups.setdefault(label, set()).add(name)
    return sorted(map(frozenset, groups.values()), key=sorted)


def test_a_fixed_number_of_clusters_is_scipys_maxclust_cut():
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    r = _matrix()
    # ROUGE/BLEU and BERTScore agree only moderately: the 0.7 threshold splits the paper's n-gram + semantic cluster
    for a in ("rouge1", "bleu"):
        r[NAMES.index(a), NAMES.index("bertscore_f1")] = r[NAMES.index("bertscore_f1"), NAMES.index(a)] = 0.5
    assert len(cluster_metrics(NAMES, r, min_correlation=0.7)) == 4
    clusters = cluster_metrics(NAMES, r, n_clusters=3)
    expected = fcluster(linkage(squareform(1 - r, checks=False), method="average"), t=3, criterion="maxclust")
    assert _partition(
        [i for c in clusters for i in [c.name] * len(c.members)], [m for c in clusters for m in c.members]
    ) == _partition(expected, NAMES)
    assert {c.name: set(c.members) for c in clusters} == {
        "n-gram + semantic": set(BLOCKS["n-gram"]),
        "perplexity": set(BLOCKS["perplexity"]),
        "llm-judge": {"judge_helpfulness"},
    }
    assert len(cluster_metrics(NAMES, r, n_clusters=2)) == 2
