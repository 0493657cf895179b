"""Map a benchmark's raw rows onto the canonical sample schema, with one-line errors naming the row and field."""
from __future__ import annotations

import json
import re
import string
from pathlib import Path

import polars as pl

from careval.datasets.loaders import SourceError, read_source
from careval.datasets.registry import Benchmark
from careval.datasets.schema import CHOICE_TASKS, SAMPLE_SCHEMA
from careval.datasets.transforms import apply_transform


class SampleError(ValueError):
    """A malformed row: the message names the benchmark, the row and the field."""


_MISSING = object()
_STEP = re.compile(r"\[(\d*)\]")


def resolve(value, path: str):
    """Follow a field path: "a.b" (keys), "a[0]" (an item), "a[].b" (b of every item). _MISSING if absent."""
    parts = path.split(".")
    for position, part in enumerate(parts):
        key = _STEP.split(part)[0] if "[" in part else part
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif key or not isinstance(value, list):
            return _MISSING
        for index in _STEP.findall(part):
            if value is None:
                return _MISSING
            if index == "":  # map the rest of the path over the items
                rest = ".".join(parts[position + 1:])
                if not isinstance(value, list):
                    return _MISSING
                items = [resolve(item, rest) if rest else item for item in value]
                return _MISSING if any(item is _MISSING for item in items) else items
            if not isinstance(value, list) or int(index) >= len(value):
                return _MISSING
            value = value[int(index)]
    return value


def _field(row: dict, name: str, benchmark: str, index: int):
    value = resolve(row, name)
    if value is _MISSING or value is None:
        raise SampleError(f"{benchmark}: row {index}: missing field '{name}'")
    return value


def _text(value, benchmark: str, index: int, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SampleError(f"{benchmark}: row {index}: field '{field}' must be non-empty text")
    return value.strip()


def _options(row: dict, entry: Benchmark, index: int) -> list[str]:
    if entry.choices:
        return list(entry.choices)
    spec = entry.fields["options"]
    if isinstance(spec, list):
        values = [_field(row, name, entry.name, index) for name in spec]
    else:
        values = _field(row, spec, entry.name, index)
        if isinstance(values, dict):  # {"A": ..., "B": ...}: keep the letter order
            values = [values[key] for key in sorted(values)]
    if not isinstance(values, list) or len(values) < 2:
        raise SampleError(f"{entry.name}: row {index}: field '{spec}' must hold at least two options")
    return [_text(v, entry.name, index, str(spec)) for v in values]


def _answer(value, answer_format: str, options: list[str], benchmark: str, index: int, field: str) -> int:
    try:
        if answer_format == "index0":
            answer = int(value)
        elif answer_format == "index1":
            answer = int(value) - 1
        elif answer_format == "letter":
            answer = string.ascii_uppercase.index(str(value).strip().upper())
        elif answer_format == "text":
            # case-insensitive: PubMedQA's "yes" against the choice "yes", MTSamples' " Urology" against "Urology"
            answer = [option.casefold() for option in options].index(str(value).strip().casefold())
        else:
            raise SampleError(f"{benchmark}: unknown answer_format '{answer_format}'")
    except (ValueError, TypeError):
        raise SampleError(
            f"{benchmark}: row {index}: field '{field}' = {value!r} is not a valid {answer_format} answer"
        ) from None
    if not 0 <= answer < len(options):
        raise SampleError(f"{benchmark}: row {index}: field '{field}' = {value!r} is out of range for {len(options)} options")
    return answer


def _meta(row: dict, entry: Benchmark) -> str:
    names = entry.meta_fields if isinstance(entry.meta_fields, dict) else {name: name for name in entry.meta_fields}
    meta = {}
    for key, path in names.items():
        value = resolve(row, path)
        meta[key] = None if value is _MISSING else value
    return json.dumps(meta, ensure_ascii=False, default=str)


def normalise_row(row: dict, entry: Benchmark, index: int) -> dict:
    fields = entry.fields
    sample_id = resolve(row, fields["id"]) if "id" in fields else None
    sample = {
        "id": f"{entry.name}-{index}" if sample_id in (None, _MISSING) else str(sample_id),
        "benchmark": entry.name,
        "task": entry.task,
        "question": _text(_field(row, fields["question"], entry.name, index), entry.name, index, fields["question"]),
        "context": None,
        "options": None,
        "answer": None,
        "reference": None,
        "meta": _meta(row, entry),
    }
    if "context" in fields:
        context = _field(row, fields["context"], entry.name, index)
        sample["context"] = "\n".join(context) if isinstance(context, list) else str(context)
    if entry.task in CHOICE_TASKS:
        sample["options"] = _options(row, entry, index)
        sample["answer"] = _answer(
            _field(row, fields["answer"], entry.name, index), entry.answer_format, sample["options"], entry.name, index, fields["answer"]
        )
    else:
        sample["reference"] = _text(_field(row, fields["reference"], entry.name, index), entry.name, index, fields["reference"])
    return sample


def _selected(rows: list[dict], select: dict[str, str]) -> list[dict]:
    return [row for row in rows if all(str(resolve(row, key)) == str(value) for key, value in select.items())]


def normalise_report(rows: list[dict], entry: Benchmark, limit: int | None = None) -> tuple[pl.DataFrame, list[str]]:
    """Canonical samples and the messages of the rows skipped (`on_bad_row: skip`); ids must be unique.

    With `on_bad_row: error` the first malformed row stops the benchmark with its one-line message.
    `limit` keeps the first `limit` valid samples.
    """
    if entry.on_bad_row not in ("error", "skip"):
        raise SampleError(f"{entry.name}: on_bad_row must be 'error' or 'skip', not '{entry.on_bad_row}'")
    rows = apply_transform(entry.transform, _selected(rows, entry.select))
    samples: list[dict] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if limit and len(samples) >= limit:
            break
        try:
            sample = normalise_row(row, entry, index)
            if sample["id"] in seen:
                raise SampleError(f"{entry.name}: row {index}: duplicate id '{sample['id']}'")
        except SampleError as error:
            if entry.on_bad_row == "error":
                raise
            skipped.append(str(error))
            continue
        seen.add(sample["id"])
        samples.append(sample)
    return pl.DataFrame(samples, schema=SAMPLE_SCHEMA), skipped


def normalise(rows: list[dict], entry: Benchmark, limit: int | None = None) -> pl.DataFrame:
    samples, skipped = normalise_report(rows, entry, limit)
    if skipped:
        # the job log keeps the count and the first reason; the samples file holds the rest
        print(f"{entry.name}: skipped {len(skipped)} malformed rows (on_bad_row: skip); first: {skipped[0]}")
    return samples


def build_benchmark(entry: Benchmark, output: Path, limit: int | None = None, root: Path = Path(".")) -> pl.DataFrame:
    try:
        rows = read_source(entry.source, root)
    except SourceError as error:
        raise SourceError(f"{entry.name}: {error}") from None
    samples = normalise(rows, entry, limit)
    output.parent.mkdir(parents=True, exist_ok=True)
    samples.write_parquet(output)
    return samples
