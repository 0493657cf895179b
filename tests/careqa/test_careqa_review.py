"""Review sample size, stratified sampling and the appendix A.3 agreement statistics."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from careval.careqa.review import (
    SHEET_COLUMNS,
    SheetError,
    agreement_stats,
    allocate,
    margin_of_error,
    read_sheets,
    sample_size,
    stratified_sample,
)


@pytest.mark.parametrize(
    "population, confidence, margin, expected",
    [
        # The paper's figure: 5,621 CareQA questions at 95% / 5%. By hand: z = 1.95996, n0 = 384.146,
        # n = 384.146 / (1 + 383.146 / 5621) = 359.63 -> 360.
        (5621, 0.95, 0.05, 360),
        # n0 = 384.146; 384.146 / (1 + 383.146 / 1000) = 277.73 -> 278.
        (1000, 0.95, 0.05, 278),
        # 384.146 / (1 + 383.146 / 100) = 79.51 -> 80.
        (100, 0.95, 0.05, 80),
        # z = 2.57583, n0 = 663.49; 663.49 / (1 + 662.49 / 10000) = 622.27 -> 623.
        (10_000, 0.99, 0.05, 623),
        # No correction left for a huge population: ceil(384.146) = 385.
        (10**12, 0.95, 0.05, 385),
    ],
)
def test_sample_size(population, confidence, margin, expected):
    assert sample_size(population, confidence, margin) == expected


def test_margin_of_error_inverts_sample_size():
    # 360 of 5,621 reaches the paper's "5% approximately": 1.95996 * sqrt(0.25 / 360 * 5261 / 5620) = 4.997%.
    assert margin_of_error(360, 5621) == pytest.approx(0.04997, abs=1e-5)
    for population in (100, 1000, 5621, 10**6):
        n = sample_size(population, margin=0.04)
        assert margin_of_error(n, population) <= 0.04 < margin_of_error(n - 1, population)
    assert margin_of_error(50, 50) == 0.0


def test_sample_size_never_exceeds_population():
    assert sample_size(1) == 1
    assert sample_size(10) == 10


@pytest.mark.parametrize(
    "bad", [dict(population=0), dict(population=10, confidence=1.0), dict(population=10, margin=0)]
)
def test_sample_size_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        sample_size(**bad)


def test_allocation_is_proportional_with_largest_remainder():
    assert allocate({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    # Exact shares 3.5 / 1.0 / 0.5: floors give 4, the one left goes to a .5 remainder, tie broken by name.
    assert allocate({"x": 7, "y": 2, "z": 1}, 5) == {"x": 4, "y": 1, "z": 0}
    # Remainders 0.4 / 0.6 / 0.0 over shares 2.4 / 1.6 / 1.0.
    assert allocate({"p": 12, "q": 8, "r": 5}, 5) == {"p": 2, "q": 2, "r": 1}
    with pytest.raises(ValueError):
        allocate({"a": 3}, 4)


def test_stratified_sample_proportions_and_seed():
    sizes = {
        "medicine": 1800,
        "nursing": 1100,
        "pharmacology": 900,
        "psychology": 800,
        "biology": 560,
        "chemistry": 461,
    }
    population = [(f"{cat}-{i}", cat) for cat, size in sizes.items() for i in range(size)]
    total = sum(sizes.values())
    sample = stratified_sample(population, 360, seed=3)
    assert len(sample) == len(set(sample)) == 360
    per_category = Counter(item.split("-")[0] for item in sample)
    for cat, size in sizes.items():
        assert abs(per_category[cat] - 360 * size / total) < 1
    assert stratified_sample(reversed(population), 360, seed=3) == sample
    assert stratified_sample(population, 360, seed=4) != sample


def _sheet(path, rows, header=SHEET_COLUMNS):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_agreement_statistics_on_a_hand_filled_sheet(tmp_path):
    # Per item: correct votes / reviewers -> >=1, >=2, all, unanimous
    # q1 3/3 -> y y y y | q2 2/3 -> y y n n | q3 1/3 -> y n n n | q4 0/3 -> n n n y | q5 4/4 -> y y y y
    first = _sheet(
        tmp_path / "ana.csv",
        [
            ("q1", "ana", "correct"),
            ("q2", "ana", "correct"),
            ("q3", "ana", "correct"),
            ("q4", "ana", "incorrect"),
            ("q5", "ana", "correct"),
        ],
    )
    second = _sheet(
        tmp_path / "rest.csv",
        [
            ("q1", "ben", "correct"),
            ("q1", "cai", "Correct"),
            ("q2", "ben", "correct"),
            ("q2", "cai", "incorrect"),
            ("q3", "ben", "incorrect"),
            ("q3", "cai", "incorrect"),
            ("q4", "ben", "incorrect"),
            ("q4", "cai", "incorrect"),
            ("q5", "ben", "correct"),
            ("q5", "cai", "correct"),
            ("q5", "dan", "correct"),
        ],
    )
    stats = agreement_stats(read_sheets([first, second]))
    assert stats.n_items == 5
    assert stats.at_least_one == pytest.approx(4 / 5)
    assert stats.at_least_two == pytest.approx(3 / 5)
    assert stats.all_reviewers == pytest.approx(2 / 5)
    assert stats.agreement == pytest.approx(3 / 5)


def test_too_few_reviewers_is_an_error():
    with pytest.raises(ValueError, match="item 'q1': 2 reviewers"):
        agreement_stats({"q1": {"a": "correct", "b": "correct"}})


@pytest.mark.parametrize(
    "rows, header, message",
    [
        ([("q1", "ana", "maybe")], None, r"bad\.csv: row 2, column 'label': expected"),
        ([("q1", "ana", "correct"), ("q2", "", "correct")], None, r"bad\.csv: row 3, column 'reviewer': empty"),
        ([("q1", "ana", "correct")], ("item_id", "annotator", "label"), r"bad\.csv: row 1, column 'reviewer': missing"),
        (
            [("q1", "ana", "correct"), ("q1", "ana", "incorrect")],
            None,
            r"bad\.csv: row 3, column 'reviewer': 'ana' already",
        ),
    ],
)
def test_malformed_sheet_names_file_row_and_column(tmp_path, rows, header, message):
    path = _sheet(tmp_path / "bad.csv", rows, header or SHEET_COLUMNS)
    with pytest.raises(SheetError, match=message) as caught:
        read_sheets([path])
    assert "\n" not in str(caught.value)
