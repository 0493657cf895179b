"""CareQA-close rows written in the published layout."""

from __future__ import annotations

import json

import polars as pl
import pytest

from careval.careqa.layout import COLUMNS, to_frame, unique_id, write_careqa
from careval.careqa.parse import ExamQuestion

QUESTIONS = [
    ExamQuestion(
        3,
        12,
        "¿Cuál es el reservorio de hierro?",
        ("Ferritina.", "Transferrina.", "Hb.", "Hepcidina."),
        1,
        2023,
        "Medicine",
    ),
    ExamQuestion(5, 40, "Which enzyme ...?", ("a", "b", "c", "d"), 4, 2021, "Biology"),
]


def test_columns_and_values():
    frame = to_frame(QUESTIONS)
    assert tuple(frame.columns) == COLUMNS
    assert frame.row(0, named=True) == {
        "exam_id": 3,
        "question": "¿Cuál es el reservorio de hierro?",
        "op1": "Ferritina.",
        "op2": "Transferrina.",
        "op3": "Hb.",
        "op4": "Hepcidina.",
        "cop": 1,
        "year": 2023,
        "category": "Medicine",
        "unique_id": "2023_Medicine_12",
    }


def test_unique_id_is_stable_and_duplicates_are_refused():
    assert unique_id(QUESTIONS[1]) == unique_id(ExamQuestion(9, 40, "other text", ("", "", "", ""), 2, 2021, "Biology"))
    with pytest.raises(ValueError, match="2021_Biology_40"):
        to_frame([QUESTIONS[1], QUESTIONS[1]])


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_round_trip(tmp_path, suffix):
    path = tmp_path / f"careqa_en{suffix}"
    written = write_careqa(QUESTIONS, path)
    read = pl.read_parquet(path) if suffix == ".parquet" else pl.read_ndjson(path, schema=written.schema)
    assert read.equals(written)
    if suffix == ".jsonl":
        # Non-ASCII stays readable in the file, as in the published Spanish split.
        assert "¿Cuál" in path.read_text(encoding="utf-8")
        assert list(json.loads(path.read_text().splitlines()[0])) == list(COLUMNS)


def test_empty_and_unknown_suffix(tmp_path):
    assert to_frame([]).columns == list(COLUMNS)
    with pytest.raises(ValueError, match="unsupported suffix"):
        write_careqa(QUESTIONS, tmp_path / "careqa.csv")
