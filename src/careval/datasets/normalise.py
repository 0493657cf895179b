"""Map a benchmark's raw rows onto the canonical sample schema, with one-line errors naming the row and field."""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from careval.datasets.benchmark import CHOICE_TASKS, Benchmark, LmEvalSource, LocalSource
from careval.datasets.lm_eval_tasks import lm_eval_samples
from careval.datasets.loaders import SourceError, SourceRow, first_row, hf_name, read_source
from careval.datasets.transforms import apply_transform
from careval.schemas import DATASET_SCHEMA


class SampleError(ValueError):
    """A malformed row: the message names the benchmark, the file and 1-based line (or row), and the field."""


class EmptyBenchmarkError(SampleError):
    """A benchmark left with no sample (empty source, `select` matching nothing, every row skipped); one line saying why."""


# How a source writes the gold answer of a choice task (Benchmark.answer_format).
ANSWER_FORMATS = ("index0", "index1", "letter", "text")


_MISSING = object()
_STEP = re.compile(r"\[(\d*)\]")


def resolve(value: Any, path: str) -> Any:
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
                rest = ".".join(parts[position + 1 :])
                if not isinstance(value, list):
                    return _MISSING
                items = [resolve(item, rest) if rest else item for item in value]
                return _MISSING if any(item is _MISSING for item in items) else items
            if not isinstance(value, list) or int(index) >= len(value):
                return _MISSING
            value = value[int(index)]
    return value


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(row: dict, name: str):
    value = resolve(row, name)
    if value is _MISSING or value is None:
        raise _RowError(f"missing field '{name}'")
    return value


class _RowError(Exception):
    """What is wrong with a row; normalise_report adds the benchmark and the place."""


def _text(value, field: str, strip: bool = True) -> str:
    if not isinstance(value, str):
        raise _RowError(f"field '{field}' must be non-empty text, not {type(value).__name__} {_show(value)}")
    if not value.strip():
        raise _RowError(f"field '{field}' must be non-empty text")
    return value.strip() if strip else value


def _identifier(value, field: str) -> str:
    # A float or a bool as an id is a column read with the wrong type (1.0 and 1 would be two ids).
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _RowError(f"field '{field}' = {_show(value)} must be text or an integer (an id)")
    if not str(value).strip():
        raise _RowError(f"field '{field}' must be a non-empty id")
    return str(value)


def _options(row: dict, entry: Benchmark) -> list[str]:
    if entry.choices:
        return list(entry.choices)
    spec = entry.fields["options"]
    if isinstance(spec, list):
        named = [(name, _field(row, name)) for name in spec]
    else:
        values = _field(row, spec)
        if isinstance(values, dict):  # {"A": ..., "B": ...}: keep the letter order
            named = [(f"{spec}.{key}", values[key]) for key in sorted(values)]
        elif isinstance(values, list):
            named = [(f"{spec}[{i}]", value) for i, value in enumerate(values)]
        else:
            raise _RowError(f"field '{spec}' must hold a list of options, not {type(values).__name__} {_show(values)}")
    if len(named) < 2:
        raise _RowError(f"field '{spec}' must hold at least two options")
    return [_text(value, name) for name, value in named]


_DIGITS = re.compile(r"\s*[0-9]+\s*")


def _integer(value) -> int | None:
    """An integer written as one: an int, digits, or an integral float (spreadsheets and pandas write 2 as 2.0).

    Not a bool (True is an int to Python, never an answer) and not 1.7 (truncating it would invent a gold).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def _expected(answer_format: str, options: list[str]) -> str:
    n = len(options)
    if answer_format == "index0":
        return f"an integer from 0 to {n - 1}"
    if answer_format == "index1":
        return f"an integer from 1 to {n}"
    if answer_format == "letter":
        return f"one letter from A to {string.ascii_uppercase[min(n, 26) - 1]}"
    return "one of: " + ", ".join(map(repr, options)) if n <= 6 else f"one of the {n} options"


def _answer(value, answer_format: str, options: list[str], field: str) -> int:
    """The 0-based gold index when `value` is exactly a valid answer in `answer_format`, else a _RowError."""
    answer = None
    if answer_format in ("index0", "index1"):
        answer = _integer(value)
        if answer is not None and answer_format == "index1":
            answer -= 1
    elif answer_format == "letter":
        if isinstance(value, str) and len(value.strip()) == 1 and value.strip().upper() in string.ascii_uppercase:
            answer = string.ascii_uppercase.index(value.strip().upper())
    elif isinstance(value, str):
        # text: case-insensitive, edge spaces aside, as PubMedQA's "yes" and MTSamples' " Urology"
        matches = [i for i, option in enumerate(options) if option.strip().casefold() == value.strip().casefold()]
        if len(matches) > 1:
            raise _RowError(
                f"field '{field}' = {_show(value)} matches {len(matches)} options, so the gold is ambiguous"
            )
        answer = matches[0] if matches else None
    if answer is None or not 0 <= answer < len(options):
        raise _RowError(
            f"field '{field}' = {_show(value)} is not a valid {answer_format} answer "
            f"(expected {_expected(answer_format, options)})"
        )
    return answer


def _context(value, field: str) -> str:
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        text = "\n".join(value)
    elif isinstance(value, str):
        text = value
    else:
        raise _RowError(f"field '{field}' must be text or a list of texts, not {type(value).__name__} {_show(value)}")
    if not text.strip():
        raise _RowError(f"field '{field}' must be non-empty text")
    return text


def _meta(row: dict, entry: Benchmark) -> str:
    names = entry.meta_fields if isinstance(entry.meta_fields, dict) else {name: name for name in entry.meta_fields}
    meta = {}
    for key, path in names.items():
        value = resolve(row, path)
        meta[key] = None if value is _MISSING else value
    return json.dumps(meta, ensure_ascii=False, default=str)


def normalise_row(row: dict, entry: Benchmark, index: int) -> dict:
    """The canonical sample of one raw row (`index`: its position, for the id of a source without ids)."""
    fields: dict[str, Any] = entry.fields
    sample = {
        "id": _identifier(_field(row, fields["id"]), fields["id"]) if "id" in fields else f"{entry.name}-{index}",
        "benchmark": entry.name,
        "task": entry.task,
        # as written: lm-eval's doc_to_text sends the field verbatim, trailing blank lines included
        "question": _text(_field(row, fields["question"]), fields["question"], strip=False),
        "context": _context(_field(row, fields["context"]), fields["context"]) if "context" in fields else None,
        "options": None,
        "answer": None,
        "reference": None,
        "meta": _meta(row, entry),
    }
    if entry.task in CHOICE_TASKS:
        sample["options"] = _options(row, entry)
        sample["answer"] = _answer(
            _field(row, fields["answer"]), entry.answer_format, sample["options"], fields["answer"]
        )
    else:
        # as written too: lm-eval's perplexity counts the words and bytes of the raw doc_to_target
        sample["reference"] = _text(_field(row, fields["reference"]), fields["reference"], strip=False)
    return sample


def check_fields_in_source(entry: Benchmark, where: str, root: Path = Path(".")) -> None:
    """Each field path of `entry` names a field of its local file's first row: checked when the config is read, so a
    misspelt field of a benchmark of your own stops the run before any job, with one line naming the key. Not where
    a transform makes the fields (from every row), nor for a file not there yet (its job says how to provide it)."""
    source = entry.source
    if not isinstance(source, LocalSource) or entry.transform is not None or not (root / source.path).exists():
        return
    row = first_row(root / source.path, source.hint)
    if row is None:
        return  # the normalisation job says that the source has no rows
    for key, spec in entry.fields.items():
        for path in [spec] if isinstance(spec, str) else spec:
            if resolve(row, path) is _MISSING:
                has = ", ".join(list(row)[:12]) + (", ..." if len(row) > 12 else "")
                raise SourceError(
                    f"{where}.fields.{key}: '{path}' is not a field of {source.path} (its first row has: {has})"
                )


def _selected(rows: list[dict], select: dict[str, str]) -> list[dict]:
    return [row for row in rows if all(str(resolve(row, key)) == str(value) for key, value in select.items())]


def first_fraction(rows: list, fraction: float | None) -> list:
    """The first int(fraction * n) rows, in file order: the authors' process_docs
    `dataset.select(range(int(0.1 * len(dataset))))`; all of them without a fraction."""
    return rows if fraction is None else rows[: int(fraction * len(rows))]


@dataclass
class Normalisation:
    """A benchmark's samples and how they came from its source rows (what the report and the summary count)."""

    samples: pl.DataFrame
    n_read: int  # rows the source holds
    n_selected: int  # rows `select` kept, and of them the first `fraction`
    n_rows: int  # rows after the transform: each became a sample, was skipped, or lay past `limit`
    skipped: list[str]  # one message per row dropped by `on_bad_row: skip`

    def report(self, benchmark: str, source: str) -> dict:
        return {
            "benchmark": benchmark,
            "source": source,
            "n_read": self.n_read,
            "n_selected": self.n_selected,
            "n_rows": self.n_rows,
            "n_samples": self.samples.height,
            "n_skipped": len(self.skipped),
            "skipped": self.skipped,
        }


def _why_empty(
    entry: Benchmark, rows: list[dict], selected: list[dict], transformed: list[dict], skipped: list[str]
) -> str:
    if not rows:
        return "the source has no rows"
    if not selected and entry.fraction is not None and _selected(rows, entry.select):
        n = len(_selected(rows, entry.select))
        return f"fraction: the first {entry.fraction} of {n} rows is none of them (int({entry.fraction} * {n}) = 0)"
    if not selected:
        for key, value in entry.select.items():
            seen = {str(found) for found in (resolve(row, key) for row in rows) if found is not _MISSING}
            if not seen:
                return f"select: no row has the field '{key}'"
            if str(value) not in seen:
                shown = ", ".join(sorted(seen)[:5]) + (", ..." if len(seen) > 5 else "")
                return f"select: {key} = {value!r} matches none of the {len(rows)} rows ({key} is one of: {shown})"
        return f"select: {entry.select} matches none of the {len(rows)} rows"
    if not transformed:
        return f"the transform '{entry.transform}' kept none of the {len(selected)} rows"
    return f"all {len(transformed)} rows were skipped (on_bad_row: skip); the first: {skipped[0]}"


def normalise_report(rows: list[dict], entry: Benchmark, limit: int | None = None) -> Normalisation:
    """Canonical samples, with the counts of rows read, selected and skipped (`on_bad_row: skip`); ids must be unique.

    With `on_bad_row: error` the first malformed row stops the benchmark with its one-line message
    naming the benchmark, the place (`<file>:<line>`, 1-based; `row <n>` for rows given without a
    file) and the field. `fraction` keeps the first int(fraction * n) of the n selected source rows,
    before the transform; `limit` keeps the first `limit` valid samples. No sample at all is an
    EmptyBenchmarkError saying why: a benchmark must not vanish from the summary unexplained.
    """
    if entry.on_bad_row not in ("error", "skip"):
        raise SampleError(f"{entry.name}: on_bad_row must be 'error' or 'skip', not '{entry.on_bad_row}'")
    if entry.task in CHOICE_TASKS and entry.answer_format not in ANSWER_FORMATS:
        raise SampleError(
            f"{entry.name}: unknown answer_format '{entry.answer_format}' (use {', '.join(ANSWER_FORMATS)})"
        )
    rows = [
        row if isinstance(row, SourceRow) else SourceRow(row, f"row {number}")
        for number, row in enumerate(rows, start=1)
    ]
    selected = first_fraction(_selected(rows, entry.select), entry.fraction)
    transformed = apply_transform(entry.transform, selected)
    samples: list[dict] = []
    skipped: list[str] = []
    first_seen: dict[str, str] = {}
    for index, row in enumerate(transformed):
        if limit and len(samples) >= limit:
            break
        where = getattr(row, "where", f"row {index + 1} of the transform's output")
        try:
            sample = normalise_row(row, entry, index)
            if sample["id"] in first_seen:
                raise _RowError(f"duplicate id '{sample['id']}' (first at {first_seen[sample['id']]})")
        except _RowError as error:
            message = f"{entry.name}: {where}: {error}"
            if entry.on_bad_row == "error":
                raise SampleError(message) from None
            skipped.append(message)
            continue
        first_seen[sample["id"]] = where
        samples.append(sample)
    if not samples:
        raise EmptyBenchmarkError(
            f"{entry.name}: no samples: {_why_empty(entry, rows, selected, transformed, skipped)}"
        )
    return Normalisation(
        pl.DataFrame(samples, schema=DATASET_SCHEMA), len(rows), len(selected), len(transformed), skipped
    )


def _log_skipped(entry: Benchmark, result: Normalisation) -> None:
    if result.skipped:
        print(
            f"{entry.name}: skipped {len(result.skipped)} malformed rows (on_bad_row: skip); first: {result.skipped[0]}"
        )


def normalise(rows: list[dict], entry: Benchmark, limit: int | None = None) -> pl.DataFrame:
    result = normalise_report(rows, entry, limit)
    _log_skipped(entry, result)
    return result.samples


def report_path(samples_path: Path) -> Path:
    """Where the normalisation report of a samples file lies: resources/datasets/<benchmark>.json beside the parquet."""
    return samples_path.with_suffix(".json")


def _source_name(entry: Benchmark, root: Path) -> str:
    if isinstance(entry.source, LocalSource):
        return str(root / entry.source.path)
    if isinstance(entry.source, LmEvalSource):
        return f"lm-eval task {entry.source.task}" + (f" ({entry.source.include})" if entry.source.include else "")
    return hf_name(entry.source)


def read_benchmark(entry: Benchmark, limit: int | None = None, root: Path = Path(".")) -> Normalisation:
    """A benchmark's samples read from its source (normalise_report); an lm-eval task's are its documents as lm-eval
    builds them (careval.datasets.lm_eval_tasks)."""
    if isinstance(entry.source, LmEvalSource):
        samples = lm_eval_samples(entry, limit)
        return Normalisation(samples, samples.height, samples.height, samples.height, [])
    try:
        rows = read_source(entry.source, root)
    except SourceError as error:
        raise SourceError(f"{entry.name}: {error}") from None
    return normalise_report(rows, entry, limit)


def build_benchmark(
    entry: Benchmark, output: Path, limit: int | None = None, root: Path = Path("."), made_by: str | None = None
) -> pl.DataFrame:
    """Write the samples (read_benchmark) and, beside them, the report counting rows read, selected and skipped
    (report_path); `made_by`: the digest of the job that made them (careval.results_check.job_digest)."""
    result = read_benchmark(entry, limit, root)
    _log_skipped(entry, result)
    output.parent.mkdir(parents=True, exist_ok=True)
    result.samples.write_parquet(output)
    report = result.report(entry.name, _source_name(entry, root))
    if made_by is not None:
        report["made_by"] = made_by
    report_path(output).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result.samples
