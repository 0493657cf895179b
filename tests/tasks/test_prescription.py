"""Prescription writing: rows parsed as lm-eval's med_prescriptions reads them, 4 options, seeded distractors."""

import random

import polars as pl
import pytest

from careval.datasets import get_benchmark, normalise
from careval.tasks.prescription import (
    FAKE_DURATIONS,
    FAKE_FREQUENCIES,
    FULL_MED_LIST,
    choices,
    diagnosis,
    easy_rows,
    hard_rows,
    medicines,
    parse_results,
)

ROWS = [
    {
        "results": str(
            {
                "procedure": {"chief_complaints_diagnosis": "Acid reflux"},
                "medicine_details": [
                    {
                        "medicine_name": "PAN 40",
                        "medicine_frequency": "Morning and Night",
                        "course_duration": "14 Days",
                    },
                    {"medicine_name": "Gaviscon", "medicine_frequency": "After food", "course_duration": "NA"},
                ],
            }
        )
    },
    {
        "results": str(
            {
                "prescription_details": {"disease_diagnosis": "Fever"},
                "Medicines Prescribed": [{"Name": "Paracetamol", "Duration": "3 Days"}],
            }
        )
    },
    {
        "results": str(
            {
                "Symptoms/Complaints": ["cough", "cold"],
                "medicine_details": [{"medicine_name": "Ascoril", "medicine_dosage": "10 ml"}],
            }
        )
    },
    {
        "results": str(
            {
                "procedure": {"chief_complaints": "pain"},
                "medicine_details": [{"medicine_name": "X", "medicine_frequency": "od", "course_duration": "1 day"}],
            }
        )
    },  # no diagnosis
    {
        "results": str(
            {"Symptoms/Complaints": ["बुखार"], "medicine_details": [{"medicine_name": "Y", "medicine_dosage": "5 mg"}]}
        )
    },  # Indian script
    {"results": "not a dict"},
]


def test_diagnosis_and_medicine_lines_by_hand():
    parsed = [parse_results(row) for row in ROWS]
    assert [diagnosis(p) for p in parsed] == ["Acid reflux", "Fever", "cough, cold", "NA", "बुखार", "NA"]
    # lower-cased frequency and duration; the "NA" filler removed (lm-eval's replacements)
    assert medicines(parsed[0]) == ["PAN 40, morning and night, 14 days", "Gaviscon, after food"]
    assert medicines(parsed[1]) == ["Paracetamol, 3 days"]
    assert medicines(parsed[2]) == ["Ascoril, 10 ml"]


def test_easy_rows_four_options_from_the_authors_list_and_seeded():
    rows = easy_rows(ROWS)
    assert [r["id"] for r in rows] == ["0", "1", "2"]  # rows 3-5 dropped, as lm-eval's `keep`
    for row, raw in zip(rows, ROWS):
        gold = row["options"][row["gold_position"]]
        assert gold in medicines(parse_results(raw))
        distractors = [o for i, o in enumerate(row["options"]) if i != row["gold_position"]]
        assert len(distractors) == 3 and set(distractors) <= set(FULL_MED_LIST)
    assert rows == easy_rows(ROWS)  # the same questions on every run
    # a row is asked the same whatever rows come after it
    assert easy_rows(ROWS[:1]) == rows[:1]


def test_the_pool_is_the_authors_list_in_order():
    utils = pytest.importorskip("lm_eval.tasks.med_prescriptions.utils")
    assert list(FULL_MED_LIST) == utils.full_med_list  # order and duplicates: seeded draws pick by position
    assert (tuple(utils.durations_list), tuple(utils.frequencies_list)) == (FAKE_DURATIONS, FAKE_FREQUENCIES)


@pytest.mark.parametrize("n_lines", [1, 2, 3, 4])
def test_hard_distractors_draw_for_draw_as_the_authors(n_lines):
    """The authors' doc_to_choice_hard and ours, each on a random.Random of the same seed, over many seeds."""
    utils = pytest.importorskip("lm_eval.tasks.med_prescriptions.utils")
    lines = [f"Med{i}, before food, {i} days" for i in range(n_lines)]
    gold, position = lines[-1], 2
    results = str(
        {
            "medicine_details": [
                {"medicine_name": f"Med{i}", "medicine_frequency": "before food", "course_duration": f"{i} days"}
                for i in range(n_lines)
            ]
        }
    )
    real = utils.random
    try:
        for seed in range(60):
            utils.random = random.Random(seed)
            theirs = utils.doc_to_choice_hard({"gold": gold, "gold_position": position, "results": results})
            ours = choices(gold, position, lines, True, random.Random(seed))
            assert ours == theirs, seed
    finally:
        utils.random = real


def test_hard_distractors_are_made_up_lines_of_prescribed_names():
    for row, raw in zip(hard_rows(ROWS), ROWS):
        names = {line.split(",")[0] for line in medicines(parse_results(raw))}
        distractors = [o for i, o in enumerate(row["options"]) if i != row["gold_position"]]
        assert len(row["options"]) == 4
        for line in distractors:
            name, frequency, duration = line.split(", ")
            assert name in names and frequency in FAKE_FREQUENCIES and duration in FAKE_DURATIONS


def test_prescription_entry_normalises_to_choice_samples():
    samples = normalise(ROWS, get_benchmark("prescription_hard"))
    assert samples.height == 3 and (samples["task"] == "prescription").all()
    assert samples["options"].list.len().to_list() == [4, 4, 4]
    assert samples["question"].to_list() == ["Acid reflux", "Fever", "cough, cold"]
    assert samples.filter(pl.col("answer").is_null()).height == 0
