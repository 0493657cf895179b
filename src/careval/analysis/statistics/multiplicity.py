"""Multiplicity adjustment of a family of p-values (Holm, Benjamini-Hochberg), as statsmodels' multipletests."""

from __future__ import annotations

import numpy as np


def adjust(p: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of one family, as statsmodels' multipletests (method "holm" or "fdr_bh"; vectorised here,
    as a call per family costs more than the family); NaN p-values stay NaN and are not counted."""
    out = np.full(len(p), np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = len(finite)
    if not m:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    ranked = p[order]
    if method == "holm":
        adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ranked))
    elif method == "fdr_bh":
        adjusted = np.minimum(1.0, np.minimum.accumulate((m / np.arange(1, m + 1) * ranked)[::-1])[::-1])
    else:
        raise ValueError(f"unknown p-value adjustment '{method}' (holm, fdr_bh)")
    out[order] = adjusted
    return out
