"""The canonical sample schema: every benchmark loader maps its source fields onto these columns."""
from __future__ import annotations

import polars as pl

# One row per sample. Nothing downstream of a loader knows a source's own field names.
SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String,          # unique within a benchmark
    "benchmark": pl.String,   # registry name, e.g. "demo_mcqa"
    "task": pl.String,        # "mcqa" | "open" (more task types slot in later)
    "question": pl.String,    # the prompt body (question, dialogue, text to summarise)
    "context": pl.String,     # optional supporting text (abstract, dialogue); may be null
    "options": pl.List(pl.String),  # MCQA options; null for open tasks
    "answer": pl.Int64,       # 0-based gold option index; null for open tasks
    "reference": pl.String,   # gold free-text answer; null for MCQA
    "meta": pl.String,        # JSON object with source-specific extras
}

TASKS = ("mcqa", "open")


def empty_samples() -> pl.DataFrame:
    return pl.DataFrame(schema=SAMPLE_SCHEMA)
