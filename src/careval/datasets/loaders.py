"""Read a benchmark's raw rows from its source: Hugging Face `datasets` or a local jsonl/parquet file."""
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


def read_local(path: Path) -> list[dict]:
    if not path.exists():
        raise SourceError(f"{path}: file not found")
    if path.suffix == ".jsonl":
        return list(read_jsonl(path))
    if path.suffix == ".parquet":
        import polars as pl

        return pl.read_parquet(path).to_dicts()
    if path.suffix == ".json":
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        if not isinstance(data, list):
            raise SourceError(f"{path}: expected a JSON list of records")
        return data
    raise SourceError(f"{path}: unsupported file type '{path.suffix}' (use .jsonl, .json or .parquet)")


def read_hf(source: HFSource) -> list[dict]:
    # Imported here: `datasets` is slow to import and only the real (hub) path needs it.
    import datasets

    try:
        dataset = datasets.load_dataset(source.repo, source.config, split=source.split)
    except Exception as error:  # the hub raises many types; the user needs one line
        where = f"{source.repo}" + (f" ({source.config})" if source.config else "") + f" split={source.split}"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SourceError(f"cannot load Hugging Face dataset {where}: {first_line}") from None
    return list(dataset)


def read_source(source: HFSource | LocalSource, root: Path = Path(".")) -> list[dict]:
    if isinstance(source, LocalSource):
        return read_local(root / source.path)
    return read_hf(source)
