"""Fixtures for the metrics tests: real benchmark samples from the shared data directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# Offline machine: any accidental Hub lookup must fail fast rather than hang.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    # CI mounts the shared folder next to the repository, so resolve it from the repo root.
    data = REPO_ROOT.parent / "shared" / "data"
    if not data.is_dir():
        pytest.fail(
            f"benchmark samples not found at {data}; the metrics tests need the shared data "
            "checkout at <repo>/../shared/data (see shared/data/README.md)"
        )
    return data


@pytest.fixture(scope="session")
def load_rows(shared_data_dir):
    def _load(dataset: str, n: int | None = None) -> list[dict]:
        path = shared_data_dir / dataset / "sample.jsonl"
        if not path.is_file():
            pytest.fail(f"missing {path}")
        with path.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        return rows[:n] if n is not None else rows

    return _load


@pytest.fixture(scope="session")
def meqsum_pairs(load_rows) -> tuple[list[str], list[str]]:
    """Reference summaries scored against the next row's summary: related text, partial overlap."""
    summaries = [r["Summary"] for r in load_rows("meqsum", 41)]
    return summaries[1:], summaries[:-1]


@pytest.fixture(scope="session")
def lfqa_pairs(load_rows) -> tuple[list[str], list[str]]:
    """Must_have statements (joined) as predictions against the free-form reference answer."""
    rows = load_rows("medlfqa_live_qa", 25)
    return [" ".join(r["Must_have"]) for r in rows], [r["Free_form_answer"] for r in rows]
