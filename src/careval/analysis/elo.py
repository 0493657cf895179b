"""Chatbot-Arena Elo scores from a user-supplied CSV (model,elo), checked line by line."""
from __future__ import annotations

import csv
import math
from pathlib import Path

from careval.datasets.registry import REPO_ROOT
from careval.textio import TextDecodeError, read_text

REQUIRED_COLUMNS = ("model", "elo")


class EloFileError(ValueError):
    """A malformed Elo CSV; the message is one line naming the file and the line."""


def resolve_elo_path(path: str | Path) -> Path:
    """A relative path is read from the working directory, else from the repository (where the demo CSV ships),
    so a run in another working directory still finds resources/demo/elo_demo.csv."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    return REPO_ROOT / path


def read_elo(path: str | Path) -> dict[str, float]:
    """model name (as in the config) -> Elo. Lines starting with '#' are comments; extra columns are ignored."""
    path = Path(path)
    try:
        lines = read_text(path).splitlines()
    except OSError as error:
        raise EloFileError(f"{path}: cannot read the Elo CSV ({error.strerror})") from None
    except TextDecodeError as error:
        raise EloFileError(str(error)) from None
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise EloFileError(f"{path}: no header line; expected columns {','.join(REQUIRED_COLUMNS)}")
    rows = list(csv.reader(line for _, line in numbered))
    header = [column.strip().lower() for column in rows[0]]
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    if missing:
        raise EloFileError(f"{path}:{numbered[0][0]}: header lacks column(s) {', '.join(missing)} (got {','.join(header)})")
    model_at, elo_at = header.index("model"), header.index("elo")
    scores: dict[str, float] = {}
    for (line_number, _), row in zip(numbered[1:], rows[1:]):
        where = f"{path}:{line_number}"
        if len(row) <= max(model_at, elo_at):
            raise EloFileError(f"{where}: expected {len(header)} columns, got {len(row)}")
        model, raw = row[model_at].strip(), row[elo_at].strip()
        if not model:
            raise EloFileError(f"{where}: empty model name")
        try:
            value = float(raw)
        except ValueError:
            raise EloFileError(f"{where}: Elo '{raw}' of model '{model}' is not a number") from None
        if not math.isfinite(value):
            raise EloFileError(f"{where}: Elo of model '{model}' is not finite")
        if model in scores:
            raise EloFileError(f"{where}: model '{model}' appears twice")
        scores[model] = value
    return scores

