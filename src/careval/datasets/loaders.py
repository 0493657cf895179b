"""Read a benchmark's raw rows from its source: Hugging Face `datasets` or a local jsonl/json/csv/xml/xlsx/parquet file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from careval.datasets.registry import HFSource, LocalSource


class SourceError(RuntimeError):
    """A source that cannot be read; the message names the benchmark and the file or repo."""


def read_jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                raise SourceError(f"{path}:{line_number}: invalid JSON ({error.msg})") from None


def read_json(path: Path) -> list[dict]:
    """A list of records, a BioC collection ({"documents": [...]}) or a dict of records keyed by id."""
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as error:
            raise SourceError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    if isinstance(data, dict) and isinstance(data.get("documents"), list):
        return data["documents"]
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        # e.g. PubMedQA's ori_pqal.json: {pmid: record}; the key becomes `_key`
        return [{"_key": key, **value} for key, value in data.items()]
    if not isinstance(data, list):
        raise SourceError(f"{path}: expected a JSON list of records, a BioC collection or a dict of records")
    return data


def read_csv(path: Path) -> list[dict]:
    """Every column as text (labels such as "1" or "007" stay text; an empty cell is "")."""
    import csv
    import sys

    csv.field_size_limit(sys.maxsize)  # clinical notes outgrow the 128 KiB default
    with open(path, encoding="utf-8-sig", newline="") as handle:
        try:
            return list(csv.DictReader(handle))
        except csv.Error as error:
            raise SourceError(f"{path}: unreadable CSV ({error})") from None


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
            value[child.tag] = (value[child.tag] if isinstance(value[child.tag], list) else [value[child.tag]]) + [converted]
        else:
            value[child.tag] = converted
    return value


def read_xml(path: Path) -> list[dict]:
    """One record per child of the root (MEDIQA2019: <Question QID><QuestionText/><AnswerList>...)."""
    import xml.etree.ElementTree as ElementTree

    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        raise SourceError(f"{path}: invalid XML ({error})") from None
    rows = [_xml_value(child) for child in root]
    return [row if isinstance(row, dict) else {"value": row} for row in rows]


def read_xlsx(path: Path) -> list[dict]:
    """The first sheet, its first row as the header (MeQSum's original MeQSum_ACL2019_BenAbacha_Demner-Fushman.xlsx)."""
    import openpyxl

    try:
        sheet = openpyxl.load_workbook(path, read_only=True, data_only=True).worksheets[0]
    except Exception as error:  # openpyxl raises zipfile, KeyError, InvalidFileException...
        raise SourceError(f"{path}: unreadable xlsx ({type(error).__name__}: {error})") from None
    rows = sheet.iter_rows(values_only=True)
    header = [str(name) if name is not None else "" for name in next(rows, [])]
    return [dict(zip(header, values)) for values in rows if any(value is not None for value in values)]


READERS = {".jsonl": lambda path: list(read_jsonl(path)), ".json": read_json, ".csv": read_csv, ".xml": read_xml,
           ".xlsx": read_xlsx}


def read_local(path: Path, hint: str = "") -> list[dict]:
    if not path.exists():
        raise SourceError(f"{path}: file not found" + (f"; {hint}" if hint else ""))
    if path.suffix == ".parquet":
        import polars as pl

        return pl.read_parquet(path).to_dicts()
    if path.suffix.lower() in READERS:
        return READERS[path.suffix.lower()](path)
    raise SourceError(f"{path}: unsupported file type '{path.suffix}' (use .jsonl, .json, .csv, .xml, .xlsx or .parquet)")


def read_hf(source: HFSource) -> list[dict]:
    # Imported here: `datasets` is slow to import and only the real (hub) path needs it.
    import datasets

    try:
        dataset = datasets.load_dataset(source.repo, source.config, split=source.split, data_files=source.data_files,
                                        revision=source.revision)
    except Exception as error:  # the hub raises many types; the user needs one line
        where = f"{source.repo}" + (f" ({source.config})" if source.config else "") + f" split={source.split}"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SourceError(f"cannot load Hugging Face dataset {where}: {first_line}") from None
    return list(dataset)


def read_source(source: HFSource | LocalSource, root: Path = Path(".")) -> list[dict]:
    if isinstance(source, LocalSource):
        return read_local(root / source.path, source.hint)
    return read_hf(source)
