"""Whether a drawn page can be read: every text inside its figure (an axes' own clipped text inside its axes, a
table cell's text inside its cell), no legend over plotted data, no number that reads "-0" or "+0". The report's
pages are checked by the tests (tests/analysis/test_legibility.py); a person still looks at them."""

from __future__ import annotations

import re

from matplotlib.collections import PathCollection
from matplotlib.patches import Rectangle
from matplotlib.table import Table
from matplotlib.text import Text
from matplotlib.transforms import Bbox

# a number that rounds to zero printed with a sign: "-0", "+0", "-0.00" (not "-0.31", not "10")
SIGNED_ZERO = re.compile(r"(?<![\w.])[+-]0(?:\.0+)?(?![\w.])")
SLACK = 1.0  # pixels: antialiasing and rounding


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (
        inner.x0 >= outer.x0 - SLACK
        and inner.y0 >= outer.y0 - SLACK
        and inner.x1 <= outer.x1 + SLACK
        and inner.y1 <= outer.y1 + SLACK
    )


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


def _texts_of(table: Table) -> list[Text]:
    return [cell.get_text() for cell in table.get_celld().values()]


def _cell_texts(fig) -> dict[int, Bbox]:
    """id(text) -> the window box of the table cell that holds it."""
    boxes = {}
    for ax in fig.axes:
        for table in ax.tables:
            if isinstance(table, Table):
                for cell in table.get_celld().values():
                    boxes[id(cell.get_text())] = cell.get_window_extent(fig.canvas.get_renderer())
    return boxes


def _hidden_tick_labels(fig) -> set[int]:
    """The tick labels an axis holds but does not draw (their ticks lie outside its view)."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # what Axis.draw draws (no public equivalent); an axes turned off draws none
            drawn = {id(tick) for tick in axis._update_ticks()} if ax.axison and axis.get_visible() else set()
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if id(tick) not in drawn:
                    hidden.update((id(tick.label1), id(tick.label2)))
    return hidden


def _data_boxes(ax, renderer) -> list[Bbox]:
    """Window boxes of what an axes plots: each line's points, each bar, each scatter point."""
    boxes = []
    for line in ax.get_lines():
        if not line.get_visible() or (line.get_label().startswith("_child") and len(line.get_xdata()) == 0):
            continue
        points = line.get_transform().transform(line.get_xydata())
        boxes += [Bbox([[x, y], [x, y]]) for x, y in points if abs(x) < 1e9 and abs(y) < 1e9]
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_width() and patch.get_height():
            boxes.append(patch.get_window_extent(renderer))
    for collection in ax.collections:
        if isinstance(collection, PathCollection) and collection.get_visible():
            points = collection.get_offset_transform().transform(collection.get_offsets())
            boxes += [Bbox([[x, y], [x, y]]) for x, y in points]
    return boxes


def _overlaps(a: Bbox, b: Bbox) -> bool:
    return a.x0 < b.x1 - SLACK and b.x0 < a.x1 - SLACK and a.y0 < b.y1 - SLACK and b.y0 < a.y1 - SLACK


def legibility_problems(fig) -> list[str]:
    """One line per problem of the drawn figure; [] where it reads."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    cells = _cell_texts(fig)
    hidden = _hidden_tick_labels(fig)
    texts = [*fig.findobj(Text), *(t for ax in fig.axes for table in ax.tables for t in _texts_of(table))]
    problems = []
    for text in texts:
        content = text.get_text()
        if not text.get_visible() or not content.strip() or id(text) in hidden:
            continue
        box = text.get_window_extent(renderer)
        if id(text) in cells:
            if not _inside(box, cells[id(text)]):
                problems.append(f"text wider than its table cell: '{_short(content)}'")
        elif not _inside(box, page):
            problems.append(f"text off the page: '{_short(content)}'")
        elif (
            text.axes is not None
            and text in text.axes.texts
            and text.get_clip_on()
            and not _inside(box, text.axes.bbox)
        ):
            problems.append(f"text clipped by its axes: '{_short(content)}'")
        if SIGNED_ZERO.search(content):
            problems.append(f"a signed zero: '{_short(content)}'")
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        frame = legend.get_window_extent(renderer)
        if any(_overlaps(frame, data) or _inside(data, frame) for data in _data_boxes(ax, renderer)):
            problems.append(f"legend over plotted data: '{_short(ax.get_title() or ax.get_ylabel() or 'an axes')}'")
    return problems
