"""Write CareQA-close rows in the published column layout (parquet or jsonl)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from careval.careqa.parse import ExamQuestion
from careval.schemas import CAREQA_CLOSE_SCHEMA

# Column order of the published HPAI-BSC/CareQA close-ended split (careval.schemas).
COLUMNS = tuple(CAREQA_CLOSE_SCHEMA)


def unique_id(question: ExamQuestion) -> str:
    # Built from what identifies the question in the official exam, so a re-parse gives the same id.
    return f"{question.year}_{question.category}_{question.number}"


def to_frame(questions: Iterable[ExamQuestion]) -> pl.DataFrame:
    rows = [
        {
            "exam_id": q.exam_id,
            "question": q.question,
            **{f"op{i}": option for i, option in enumerate(q.options, start=1)},
            "cop": q.cop,
            "year": q.year,
            "category": q.category,
            "unique_id": unique_id(q),
        }
        for q in questions
    ]
    frame = pl.DataFrame(rows, schema=CAREQA_CLOSE_SCHEMA) if rows else pl.DataFrame(schema=CAREQA_CLOSE_SCHEMA)
    duplicated = frame.filter(pl.col("unique_id").is_duplicated())["unique_id"].unique().to_list()
    if duplicated:
        raise ValueError(f"duplicate unique_id {sorted(duplicated)[:5]}: the same exam question was given twice")
    return frame.select(COLUMNS)


def write_careqa(questions: Iterable[ExamQuestion], path: Path | str) -> pl.DataFrame:
    """Write to .parquet or .jsonl (chosen by suffix) and return the frame written."""
    path = Path(path)
    frame = to_frame(questions)
    if path.suffix == ".parquet":
        frame.write_parquet(path)
    elif path.suffix == ".jsonl":
        frame.write_ndjson(path)
    else:
        raise ValueError(f"{path}: unsupported suffix {path.suffix!r}, use .parquet or .jsonl")
    return frame
