"""The real benchmark samples in ../shared/data (CI provides ../shared next to the clone): where they are,
their rows, and the text pairs the metric tests score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data_dir() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(
            f"real-data samples not found at {SHARED_DATA}; the tests need the shared data checkout at "
            "<repo>/../shared/data (see shared/data/README.md; CI provides ../shared next to the clone)"
        )
    return SHARED_DATA


def sample_rows(dataset: str, n: int | None = None) -> list[dict]:
    """The first `n` (all by default) rows of ../shared/data/<dataset>/sample.jsonl."""
    path = shared_data_dir() / dataset / "sample.jsonl"
    if not path.is_file():
        pytest.fail(f"missing {path}")
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return rows[:n] if n is not None else rows


def meqsum_pairs() -> tuple[list[str], list[str]]:
    """Reference summaries scored against the next row's summary: related text, partial overlap."""
    summaries = [r["Summary"] for r in sample_rows("meqsum", 41)]
    return summaries[1:], summaries[:-1]


def lfqa_pairs() -> tuple[list[str], list[str]]:
    """Must_have statements (joined) as predictions against the free-form reference answer."""
    rows = sample_rows("medlfqa_live_qa", 25)
    return [" ".join(r["Must_have"]) for r in rows], [r["Free_form_answer"] for r in rows]
