"""The report's text pages: a figure that has nothing to draw (its title and why), and a page of notes (one helper
for every figure module)."""

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


def text_page(title: str, lines: tuple[str, ...] | list[str]):
    """A page of notes, one paragraph each, wrapped to the page's width."""
    import textwrap

    wrapped = ["\n".join(textwrap.wrap(line, 110)) for line in lines]
    height = 1.5 + 0.22 * sum(text.count("\n") + 2 for text in wrapped)
    fig, ax = plt.subplots(figsize=(8.5, height))
    ax.axis("off")
    ax.set_title(title, fontsize=11)
    ax.text(0.0, 1.0, "\n\n".join(wrapped), ha="left", va="top", fontsize=8, transform=ax.transAxes)
    return fig
