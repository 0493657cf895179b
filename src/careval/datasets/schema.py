"""The canonical sample schema: every benchmark loader maps its source fields onto these columns."""
from __future__ import annotations

import polars as pl

# One row per sample. Nothing downstream of a loader knows a source's own field names.
SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String,          # unique within a benchmark
    "benchmark": pl.String,   # registry name, e.g. "demo_mcqa"
    "task": pl.String,        # one of TASKS
    "question": pl.String,    # the prompt body (question, dialogue, text to summarise)
    "context": pl.String,     # optional supporting text (abstract, dialogue); may be null
    "options": pl.List(pl.String),  # the options or class names of a CHOICE_TASKS sample; else null
    "answer": pl.Int64,       # 0-based gold option index; null for text tasks
    "reference": pl.String,   # gold text (answer, note, summary, rendered gold relations); null for choice tasks
    "meta": pl.String,        # JSON object with source-specific extras
}

TASKS = ("mcqa", "open", "classification", "extraction", "prescription")
# Tasks whose gold is an index into `options` (the others have a text `reference`).
CHOICE_TASKS = ("mcqa", "classification", "prescription")


def empty_samples() -> pl.DataFrame:
    return pl.DataFrame(schema=SAMPLE_SCHEMA)
