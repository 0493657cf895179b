"""Chatbot-Arena Elo scores from a user-supplied CSV (model,elo), checked line by line."""

from __future__ import annotations

import csv
import difflib
import math
from dataclasses import dataclass
from pathlib import Path

from careval.datasets.benchmark import REPO_ROOT
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
    numbered = [
        (n, line) for n, line in enumerate(lines, start=1) if line.strip() and not line.lstrip().startswith("#")
    ]
    if not numbered:
        raise EloFileError(f"{path}: no header line; expected columns {','.join(REQUIRED_COLUMNS)}")
    rows = list(csv.reader(line for _, line in numbered))
    header = [column.strip().lower() for column in rows[0]]
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    if missing:
        raise EloFileError(
            f"{path}:{numbered[0][0]}: header lacks column(s) {', '.join(missing)} (got {','.join(header)})"
        )
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


@dataclass(frozen=True)
class EloCheck:
    """An Elo CSV against the configured models: their Elo, and the names on either side that match nothing."""

    scores: dict[str, float]  # configured model -> Elo
    unknown: list[str]  # CSV names that are no configured model: left out of the figure
    missing: list[str]  # configured models the CSV has no Elo for: not in the figure

    def warning(self) -> str | None:
        """One line naming the models the Elo figure leaves out, for the log and the report; None if none."""
        parts = []
        if self.unknown:
            parts.append(f"{len(self.unknown)} Elo CSV model(s) not in the config, ignored: {', '.join(self.unknown)}")
        if self.missing:
            parts.append(
                f"{len(self.missing)} configured model(s) without an Elo, not in the Elo figure: "
                f"{', '.join(self.missing)}"
            )
        return "; ".join(parts) or None


def check_elo(path: str | Path, models: list[str], drawn: set[str] | None = None) -> EloCheck:
    """Read and check the Elo CSV against the configured model names, once, before any job runs.

    A CSV name that is no configured model is normal (an arena CSV lists many models; a config may
    run a subset) and is only counted in EloCheck.warning. But a name close to a configured model
    that has no Elo is a misspelling, which would silently drop that model: an EloFileError naming
    both. So is a CSV matching no configured model at all (the Elo figure would be empty).
    `drawn`: the models the Elo figures show (None: every configured model); only those are named as missing.
    """
    path = resolve_elo_path(path)
    scores = read_elo(path)
    unknown = [name for name in scores if name not in models]
    missing = [name for name in models if name not in scores]
    shown_missing = [name for name in missing if drawn is None or name in drawn]
    for name in unknown:
        # cutoff 0.8: one or two characters off in a typical model name ("llama-3.1-8B" vs "llama-3.1-8b")
        close = difflib.get_close_matches(name, missing, n=1, cutoff=0.8) or [
            model for model in missing if model.casefold() == name.casefold()
        ]
        if close:
            raise EloFileError(
                f"{path}: model '{name}' is not in the config; did you mean '{close[0]}'? (it has no Elo otherwise)"
            )
    if len(unknown) == len(scores):
        raise EloFileError(
            f"{path}: none of its {len(scores)} models is in the config (config models: {', '.join(models)})"
        )
    return EloCheck({name: value for name, value in scores.items() if name in models}, unknown, shown_missing)
