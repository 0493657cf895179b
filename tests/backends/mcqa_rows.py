"""Log-likelihood requests built from the real MedQA / MedMCQA rows in ../shared/data (their
SOURCE.md), in the two MCQA protocols: cloze (the option text after "Answer:", as careval's
tasks/mcqa.py) and letters (the options listed, " A".." D" after "Answer:")."""

from __future__ import annotations

import json
import re
from pathlib import Path

LETTERS = "ABCD"


def questions(shared_data: Path, dataset: str, n: int) -> list[tuple[str, list[str]]]:
    """(question, four options) of the first n rows of medqa or medmcqa."""
    out = []
    with open(shared_data / dataset / "sample.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if dataset == "medqa":
                options = [row["options"][k] for k in LETTERS]
            else:  # medmcqa's re-host keeps the letters in the text: "A. ..."
                options = [re.sub(r"^[A-D]\.\s*", "", c) for c in row["choices"]]
            out.append((row["question"], options))
            if len(out) == n:
                break
    return out


def cloze(items: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    return [(f"Question: {q}\nAnswer:", " " + o) for q, options in items for o in options]


def letters(items: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    pairs = []
    for q, options in items:
        listed = "".join(f"\n{k}. {o}" for k, o in zip(LETTERS, options))
        pairs.extend((f"Question: {q}{listed}\nAnswer:", " " + k) for k in LETTERS)
    return pairs
