"""The report's page for a figure that has nothing to draw: its title and why (one helper for every figure module)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes or CI
import matplotlib.pyplot as plt


def empty_page(title: str, message: str):
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.axis("off")
    ax.set_title(title, fontsize=11)
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=9, wrap=True)
    return fig
