"""The legibility check (careval.analysis.figures.legibility) finds what a reader cannot read, and only that."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from careval.analysis.figures.legibility import legibility_problems


@pytest.fixture
def fig():
    figure, ax = plt.subplots(figsize=(4, 3))
    yield figure, ax
    plt.close(figure)


def test_a_page_that_reads_has_no_problem(fig):
    figure, ax = fig
    ax.plot([0, 1, 2], [0, 1, 0], label="a line")
    ax.legend(loc="lower center")  # below the peak, above the line's ends: clear of every point
    ax.set_ylim(-2, 1.2)
    ax.text(1, -1, "+0.31 -0.5 10", ha="center")
    figure.text(0.01, 0.01, "a short note", fontsize=7)
    assert legibility_problems(figure) == []


def test_a_note_running_off_the_page_is_found(fig):
    figure, _ = fig
    figure.text(0.01, 0.01, "a note much longer than the page is wide, never wrapped, so its end is lost " * 2)
    (problem,) = legibility_problems(figure)
    assert problem.startswith("text off the page: 'a note much longer")


def test_a_value_label_past_its_axes_is_clipped(fig):
    figure, ax = fig
    figure.subplots_adjust(left=0.2)  # room for the tick labels
    ax.barh([0, 1], [0.5, -0.31])
    ax.set_xlim(0, 1)
    ax.text(-0.02, 1, "-0.31", ha="right", va="center", clip_on=True)  # left of 0, where the bar would end
    assert legibility_problems(figure) == ["text clipped by its axes: '-0.31'"]


def test_a_legend_over_the_bars_is_found(fig):
    figure, ax = fig
    ax.bar([0, 1, 2], [1, 1, 1], label="bars")
    ax.legend(loc="center")
    assert legibility_problems(figure) == ["legend over plotted data: 'an axes'"]


@pytest.mark.parametrize("label", ["-0", "+0", "-0.00", "diff -0 [+0, +0.1]"])
def test_a_signed_zero_is_found(fig, label):
    figure, ax = fig
    ax.set_title(label)
    assert any("signed zero" in problem for problem in legibility_problems(figure))


def test_a_table_cell_narrower_than_its_text_is_found(fig):
    figure, ax = fig
    ax.axis("off")
    table = ax.table(cellText=[["Are benign brain tumors serious, and how are they treated?", "x"]], loc="center")
    table.auto_set_font_size(False)  # as Table 6's page: a fixed size (matplotlib would shrink the text to fit)
    table.set_fontsize(7)
    assert any("wider than its table cell" in problem for problem in legibility_problems(figure))


def test_table_6_wraps_its_questions_in_the_papers_layout():
    import polars as pl

    from careval.analysis.figures.studies import table6_figure

    question = "Are benign brain tumors serious, and how are they treated when they press on the brain?"
    table = pl.DataFrame(
        {
            "question": [question, "What is metformin?"],
            "must_have": ["Benign tumours can still press on the brain; surgery removes most", "A drug"],
            "nice_to_have": ["Radiotherapy treats what surgery cannot reach", ""],
            "benchmark": ["demo_open_qa", "demo_open_qa"],
            "Model A/must_have": [412.5, None],
            "Model A/nice_to_have": [380.25, 12.0],
        }
    )
    figure = table6_figure(table)
    cells = figure.axes[0].tables[0].get_celld()
    assert [cells[0, k].get_text().get_text() for k in range(5)] == [
        "Question",
        "Must have",
        "Nice to have",
        "Benchmark",
        "Model A",
    ]
    assert cells[1, 0].get_text().get_text().replace("\n", " ") == question  # wrapped, not cut
    assert "\n" in cells[1, 0].get_text().get_text()
    assert (
        cells[1, 4].get_text().get_text() == "[412.500, 380.250]"
        and cells[2, 4].get_text().get_text() == "[n/a, 12.000]"
    )
    assert cells[0, 0].get_width() == max(cell.get_width() for cell in cells.values())  # the question widest
    assert legibility_problems(figure) == []
    plt.close(figure)
