"""Map a benchmark's raw rows onto the canonical sample schema, with one-line errors naming the row and field."""
from __future__ import annotations

import json
import string
from pathlib import Path

import polars as pl

from careval.datasets.loaders import read_source
from careval.datasets.registry import Benchmark
from careval.datasets.schema import SAMPLE_SCHEMA


class SampleError(ValueError):
    """A malformed row: the message names the benchmark, the row and the field."""


def _field(row: dict, name: str, benchmark: str, index: int):
    if name not in row or row[name] is None:
        raise SampleError(f"{benchmark}: row {index}: missing field '{name}'")
    return row[name]


def _text(value, benchmark: str, index: int, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SampleError(f"{benchmark}: row {index}: field '{field}' must be non-empty text")
    return value.strip()


def _options(row: dict, spec: str | list[str], benchmark: str, index: int) -> list[str]:
    if isinstance(spec, list):
        values = [_field(row, name, benchmark, index) for name in spec]
    else:
        values = _field(row, spec, benchmark, index)
        if isinstance(values, dict):  # {"A": ..., "B": ...}: keep the letter order
            values = [values[key] for key in sorted(values)]
    if not isinstance(values, list) or len(values) < 2:
        raise SampleError(f"{benchmark}: row {index}: field '{spec}' must hold at least two options")
    return [_text(v, benchmark, index, str(spec)) for v in values]


def _answer(value, answer_format: str, options: list[str], benchmark: str, index: int, field: str) -> int:
    try:
        if answer_format == "index0":
            answer = int(value)
        elif answer_format == "index1":
            answer = int(value) - 1
        elif answer_format == "letter":
            answer = string.ascii_uppercase.index(str(value).strip().upper())
        elif answer_format == "text":
            answer = options.index(str(value).strip())
        else:
            raise SampleError(f"{benchmark}: unknown answer_format '{answer_format}'")
    except (ValueError, TypeError):
        raise SampleError(
            f"{benchmark}: row {index}: field '{field}' = {value!r} is not a valid {answer_format} answer"
        ) from None
    if not 0 <= answer < len(options):
        raise SampleError(f"{benchmark}: row {index}: field '{field}' = {value!r} is out of range for {len(options)} options")
    return answer


def normalise_row(row: dict, entry: Benchmark, index: int) -> dict:
    fields = entry.fields
    sample = {
        "id": str(row[fields["id"]]) if "id" in fields and row.get(fields["id"]) is not None else f"{entry.name}-{index}",
        "benchmark": entry.name,
        "task": entry.task,
        "question": _text(_field(row, fields["question"], entry.name, index), entry.name, index, fields["question"]),
        "context": None,
        "options": None,
        "answer": None,
        "reference": None,
        "meta": json.dumps({name: row.get(name) for name in entry.meta_fields}, ensure_ascii=False),
    }
    if "context" in fields:
        context = _field(row, fields["context"], entry.name, index)
        sample["context"] = "\n".join(context) if isinstance(context, list) else str(context)
    if entry.task == "mcqa":
        sample["options"] = _options(row, fields["options"], entry.name, index)
        sample["answer"] = _answer(
            _field(row, fields["answer"], entry.name, index), entry.answer_format, sample["options"], entry.name, index, fields["answer"]
        )
    else:
        sample["reference"] = _text(_field(row, fields["reference"], entry.name, index), entry.name, index, fields["reference"])
    return sample


def normalise(rows: list[dict], entry: Benchmark, limit: int | None = None) -> pl.DataFrame:
    """Canonical samples; ids must be unique within the benchmark."""
    rows = rows[:limit] if limit else rows
    samples = [normalise_row(row, entry, index) for index, row in enumerate(rows)]
    seen: set[str] = set()
    for index, sample in enumerate(samples):
        if sample["id"] in seen:
            raise SampleError(f"{entry.name}: row {index}: duplicate id '{sample['id']}'")
        seen.add(sample["id"])
    return pl.DataFrame(samples, schema=SAMPLE_SCHEMA)


def build_benchmark(entry: Benchmark, output: Path, limit: int | None = None, root: Path = Path(".")) -> pl.DataFrame:
    samples = normalise(read_source(entry.source, root), entry, limit)
    output.parent.mkdir(parents=True, exist_ok=True)
    samples.write_parquet(output)
    return samples
