"""Clusters of metrics that agree across models: hierarchical clustering of a metric x metric correlation matrix."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from careval.metrics.registry import metric_category


@dataclass(frozen=True)
class Cluster:
    name: str
    members: tuple[str, ...]


def cluster_metrics(
    names: list[str], correlation: np.ndarray, min_correlation: float = 0.7, n_clusters: int | None = None
) -> list[Cluster]:
    """Average-linkage clusters on the distance 1 - r, cut where the mean correlation falls below `min_correlation`,
    or, when `n_clusters` is given, into at most that many clusters (scipy's maxclust; the paper reports three).

    Signed r, not |r|: perplexity falls as ROUGE rises, and the paper keeps them in separate clusters.
    An undefined coefficient (too few models, a constant metric) counts as r = 0: no evidence of agreement.
    Each cluster is named after the categories of its members (e.g. "n-gram + semantic").
    """
    if len(names) == 0:
        return []
    if len(names) == 1:
        return [Cluster(metric_category(names[0]), (names[0],))]
    r = np.where(np.isfinite(correlation), correlation, 0.0)
    distance = 1.0 - (r + r.T) / 2
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(np.clip(distance, 0.0, 2.0), checks=False), method="average")
    if n_clusters is not None:
        labels = fcluster(tree, t=n_clusters, criterion="maxclust")
    else:
        labels = fcluster(tree, t=1.0 - min_correlation, criterion="distance")
    groups: dict[int, list[str]] = {}
    for name, label in zip(names, labels):
        groups.setdefault(label, []).append(name)
    clusters, seen = [], Counter()
    for members in sorted(groups.values(), key=lambda m: (-len(m), m)):
        counts = Counter(metric_category(m) for m in members)
        name = " + ".join(category for category, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        seen[name] += 1
        clusters.append(Cluster(name if seen[name] == 1 else f"{name} ({seen[name]})", tuple(members)))
    return clusters
