"""The report's text pages: a figure that has nothing to draw (its title and why), and a page of notes (one helper
for every figure module)."""

from __future__ import annotations


def _pyplot():
    """pyplot, on the Agg backend (no display on cluster nodes or CI); imported when a page is drawn, not with the
    module: the plan imports its text helpers (wrap_to), and matplotlib is a tenth of a second of every plan."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def empty_page(title: str, message: str):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.axis("off")
    ax.set_title(title, fontsize=11)
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=9, wrap=True)
    return fig


def text_page(title: str, lines: tuple[str, ...] | list[str]):
    """A page of notes, one paragraph each, wrapped to the page's width."""
    import textwrap

    plt = _pyplot()
    wrapped = ["\n".join(textwrap.wrap(line, 110)) for line in lines]
    height = 1.5 + 0.22 * sum(text.count("\n") + 2 for text in wrapped)
    fig, ax = plt.subplots(figsize=(8.5, height))
    ax.axis("off")
    ax.set_title(title, fontsize=11)
    ax.text(0.0, 1.0, "\n\n".join(wrapped), ha="left", va="top", fontsize=8, transform=ax.transAxes)
    return fig


def unsigned_zero(text: str) -> str:
    """A formatted number that rounds to zero, without its sign ("-0.00" -> "0.00", "+0" -> "0")."""
    return text.lstrip("+-") if float(text) == 0 else text


def wrap_to(text: str, width_inches: float, fontsize: float) -> str:
    """`text` wrapped to a width in inches at a font size (a character ~0.55 x its size), each line of it apart."""
    import textwrap

    chars = max(20, int(width_inches * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def bottom_note(fig, note: str, fontsize: float = 7) -> float:
    """`note` wrapped to the figure's width at its foot; returns the share of the height it takes, the bottom of the
    rect tight_layout lays the axes out above (so the note never runs into an axis label)."""
    width, height = fig.get_size_inches()
    wrapped = wrap_to(note, width - 0.3, fontsize)
    fig.text(0.01, 0.005, wrapped, fontsize=fontsize, va="bottom")
    return (0.1 + 1.25 * fontsize / 72 * (wrapped.count("\n") + 1)) / height
