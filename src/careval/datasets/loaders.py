"""Read a benchmark's raw rows from its source: Hugging Face `datasets` or a local jsonl/json/csv/xml/xlsx/parquet file."""

from __future__ import annotations

import bisect
import csv
import io
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from careval.datasets.benchmark import HFSource, LocalSource
from careval.textio import TextDecodeError, decode_text, read_text


class SourceError(RuntimeError):
    """A source that cannot be read; the message names the benchmark and the file or repo."""


class SourceRow(dict):
    """A raw row that knows where it was read (`where`: "<file>:<line>", 1-based), so an error can point at it.

    A dict, so field paths, transforms and comparisons treat it as the plain row it is.
    """

    __slots__ = ("where",)

    def __init__(self, row: dict, where: str) -> None:
        super().__init__(row)
        self.where = where


def located(row: dict, source: dict) -> dict:
    """`row` (a transform's reshaping of `source`) keeps the place `source` was read from."""
    return SourceRow(row, source.where) if isinstance(source, SourceRow) else row


def _text(path: Path) -> str:
    try:
        return read_text(path)
    except TextDecodeError as error:
        raise SourceError(str(error)) from None


def read_jsonl(path: Path) -> Iterator[dict]:
    for line_number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise SourceError(f"{path}:{line_number}: invalid JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise SourceError(f"{path}:{line_number}: expected a JSON object (a record), got {type(row).__name__}")
        yield SourceRow(row, f"{path}:{line_number}")


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    assert match is not None  # [ \t\n\r]* matches everywhere
    return match.end()


def _item_offsets(text: str, position: int) -> list[int]:
    """Where each item of the JSON array opening at `position` starts (the text is known to be valid JSON)."""
    decoder, offsets = json.JSONDecoder(), []
    position = _skip(text, position + 1)
    while text[position] != "]":
        offsets.append(position)
        position = _skip(text, decoder.raw_decode(text, position)[1])
        if text[position] == ",":
            position = _skip(text, position + 1)
    return offsets


def _member_offsets(text: str, position: int) -> dict[str, int]:
    """Where each value of the JSON object opening at `position` starts (a repeated key: the last, as json.loads)."""
    decoder, offsets = json.JSONDecoder(), {}
    position = _skip(text, position + 1)
    while text[position] != "}":
        key, position = decoder.raw_decode(text, position)
        position = _skip(text, _skip(text, position) + 1)  # past the colon
        offsets[key] = position
        position = _skip(text, decoder.raw_decode(text, position)[1])
        if text[position] == ",":
            position = _skip(text, position + 1)
    return offsets


def _line_of(text: str) -> Callable[[int], int]:
    newlines = [match.start() for match in re.finditer("\n", text)]
    return lambda offset: bisect.bisect_left(newlines, offset) + 1


def read_json(path: Path) -> list[dict]:
    """A list of records, a BioC collection ({"documents": [...]}) or a dict of records keyed by id."""
    text = _text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise SourceError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    line_of, start = _line_of(text), _skip(text, 0)
    if isinstance(data, dict) and isinstance(data.get("documents"), list):
        records, offsets = data["documents"], _item_offsets(text, _member_offsets(text, start)["documents"])
    elif isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        # e.g. PubMedQA's ori_pqal.json: {pmid: record}; the key becomes `_key`
        members = _member_offsets(text, start)
        records, offsets = [{"_key": key, **value} for key, value in data.items()], [members[key] for key in data]
    elif isinstance(data, list):
        records, offsets = data, _item_offsets(text, start)
    else:
        raise SourceError(f"{path}: expected a JSON list of records, a BioC collection or a dict of records")
    rows = []
    for record, offset in zip(records, offsets):
        if not isinstance(record, dict):
            raise SourceError(
                f"{path}:{line_of(offset)}: expected a JSON object (a record), got {type(record).__name__}"
            )
        rows.append(SourceRow(record, f"{path}:{line_of(offset)}"))
    return rows


def read_csv(path: Path) -> list[dict]:
    """Every column as text (labels such as "1" or "007" stay text; an empty cell is "").

    A row is named by the line it starts on (a quoted cell may span lines). A row with more or
    fewer cells than the header is an error: it is what a stray quote or delimiter makes, and
    read on it would put values under the wrong columns.
    """
    csv.field_size_limit(sys.maxsize)  # clinical notes outgrow the 128 KiB default
    reader = csv.reader(io.StringIO(_text(path), newline=""))
    try:
        header = next(reader, None)
        if header is None:  # an empty file: no rows (normalisation says so)
            return []
        rows, end = [], reader.line_num
        for cells in reader:
            line, end = end + 1, reader.line_num
            if not cells:  # a blank line
                continue
            if len(cells) != len(header):
                raise SourceError(f"{path}:{line}: {len(cells)} cells where the header has {len(header)}")
            rows.append(SourceRow(dict(zip(header, cells)), f"{path}:{line}"))
    except csv.Error as error:
        raise SourceError(f"{path}:{reader.line_num}: unreadable CSV ({error})") from None
    return rows


def _xml_value(element):
    """A leaf is its text; an element whose children share one tag is a list; else a dict (attributes too)."""
    children = list(element)
    if not children:
        text = (element.text or "").strip()
        return {**element.attrib, "text": text} if element.attrib else text
    tags = {child.tag for child in children}
    # <AnswerList> with one <Answer> is still a list
    if len(tags) == 1 and not element.attrib and (len(children) > 1 or element.tag.endswith("List")):
        return [_xml_value(child) for child in children]
    value = dict(element.attrib)
    for child in children:
        converted = _xml_value(child)
        if child.tag in value:  # a repeated tag among others: collect into a list
            value[child.tag] = (value[child.tag] if isinstance(value[child.tag], list) else [value[child.tag]]) + [
                converted
            ]
        else:
            value[child.tag] = converted
    return value


_XML_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _xml_child_lines(data: bytes) -> list[int]:
    """The line each child element of the root starts on (ElementTree keeps no positions; expat reports them)."""
    from xml.parsers import expat

    parser, depth, lines = expat.ParserCreate(), 0, []

    def start(name, attributes):
        nonlocal depth
        depth += 1
        if depth == 2:
            lines.append(parser.CurrentLineNumber)

    def end(name):
        nonlocal depth
        depth -= 1

    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.Parse(data, True)
    return lines


def read_xml(path: Path) -> list[dict]:
    """One record per child of the root (MEDIQA2019: <Question QID><QuestionText/><AnswerList>...)."""
    import xml.etree.ElementTree as ElementTree

    data = path.read_bytes()
    declared = _XML_DECLARED_ENCODING.match(data)
    if declared is None or declared.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8"):
        # expat would report a bad UTF-8 byte as "not well-formed (invalid token)"; name it as such
        try:
            decode_text(data, path)
        except TextDecodeError as error:
            raise SourceError(str(error)) from None
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        line, column = error.position
        reason = str(error).rsplit(": line ", 1)[0]
        raise SourceError(f"{path}:{line}: invalid XML ({reason} at column {column + 1})") from None
    rows = [_xml_value(child) for child in root]
    return [
        SourceRow(row if isinstance(row, dict) else {"value": row}, f"{path}:{line}")
        for row, line in zip(rows, _xml_child_lines(data))
    ]


def read_xlsx(path: Path) -> list[dict]:
    """The first sheet, its first row as the header (MeQSum's original MeQSum_ACL2019_BenAbacha_Demner-Fushman.xlsx)."""
    import openpyxl

    try:
        sheet = openpyxl.load_workbook(path, read_only=True, data_only=True).worksheets[0]
    except Exception as error:  # openpyxl raises zipfile, KeyError, InvalidFileException...
        raise SourceError(f"{path}: unreadable xlsx ({type(error).__name__}: {error})") from None
    rows = sheet.iter_rows(values_only=True)
    header = [str(name) if name is not None else "" for name in next(rows, [])]
    # a sheet row is the file's line: the header is row 1, as the spreadsheet numbers them
    return [
        SourceRow(dict(zip(header, values)), f"{path}:{number}")
        for number, values in enumerate(rows, start=2)
        if any(value is not None for value in values)
    ]


READERS = {
    ".jsonl": lambda path: list(read_jsonl(path)),
    ".json": read_json,
    ".csv": read_csv,
    ".xml": read_xml,
    ".xlsx": read_xlsx,
}


def read_local(path: Path, hint: str = "") -> list[dict]:
    if not path.exists():
        raise SourceError(f"{path}: file not found" + (f"; {hint}" if hint else ""))
    if path.suffix == ".parquet":
        import polars as pl

        return [
            SourceRow(row, f"{path}: row {number}")
            for number, row in enumerate(pl.read_parquet(path).to_dicts(), start=1)
        ]
    if path.suffix.lower() in READERS:
        return READERS[path.suffix.lower()](path)
    raise SourceError(
        f"{path}: unsupported file type '{path.suffix}' (use .jsonl, .json, .csv, .xml, .xlsx or .parquet)"
    )


def first_row(path: Path, hint: str = "") -> dict | None:
    """The first record of a local file (None: it has none): a jsonl file's first line only, else the file read whole."""
    if path.suffix.lower() == ".jsonl" and path.exists():
        return next(read_jsonl(path), None)
    rows = read_local(path, hint)
    return rows[0] if rows else None


def read_hf(source: HFSource) -> list[dict]:
    # Imported here: `datasets` is slow to import and only the real (hub) path needs it.
    import datasets

    try:
        dataset = datasets.load_dataset(
            source.repo, source.config, split=source.split, data_files=source.data_files, revision=source.revision
        )
    except Exception as error:  # the hub raises many types; the user needs one line
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SourceError(f"cannot load Hugging Face dataset {hf_name(source)}: {first_line}") from None
    rows: Iterable[dict] = dataset  # pyright: ignore[reportAssignmentType]  (a split: its rows are dicts)
    return [SourceRow(row, f"{hf_name(source)}: row {number}") for number, row in enumerate(rows, start=1)]


def hf_name(source: HFSource) -> str:
    return f"{source.repo}" + (f" ({source.config})" if source.config else "") + f" split={source.split}"


def read_source(source: HFSource | LocalSource, root: Path = Path(".")) -> list[dict]:
    if isinstance(source, LocalSource):
        return read_local(root / source.path, source.hint)
    return read_hf(source)
