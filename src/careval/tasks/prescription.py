"""Prescription writing (the paper's task, lm-eval med_prescriptions): pick the prescribed medicine among four.

The paper's scoring (lm-eval `med_prescriptions_easy/hard`, output_type multiple_choice, metric
acc) is 4-option multiple choice by log-likelihood: the gold is one medicine line of the
prescription ("name, frequency, duration"), put at a random position among three distractors.
Easy distractors are other prescriptions' medicine lines (lm-eval draws them from a fixed list of
such lines; we draw from the dataset's own lines, the same kind of pool). Hard distractors keep
medicine names of the same prescription (or the gold's own name) with a made-up frequency and
duration. lm-eval draws without a seed; here every draw is seeded by the row, so a rerun asks the
same questions. Rows without a diagnosis or without medicines are dropped (lm-eval's `keep`), as
are rows in an Indian script (lm-eval filters those too). Scoring is MCQA's (tasks/mcqa.py).
"""

from __future__ import annotations

import ast
import random
import re

# lm-eval's lists of made-up durations and frequencies for the hard distractors.
FAKE_DURATIONS = ("1 week", "1 month", "3 days", "5 days", "2 weeks", "10 days", "3 weeks", "2 months", "once")
FAKE_FREQUENCIES = ("before breakfast", "before breakfast and dinner", "after food", "before food")
N_OPTIONS = 4
SEED = 1234

INDIAN_SCRIPTS = re.compile(
    "[\u0900-\u097f\u0980-\u09ff\u0a80-\u0aff\u0a00-\u0a7f\u0c80-\u0cff\u0d00-\u0d7f\u0b80-\u0bff\u0c00-\u0c7f]"
)
# Filler the annotators wrote for an unknown value, removed from a medicine line.
FILLERS = (", na", " na", " n/a", "NA", " not specified", " not provided")
TEMPLATE_LINE = "[Medicine Name], [medicine frequency], [course duration]"


def parse_results(row: dict) -> dict:
    """The `results` column holds a Python literal (a dict) written as a string."""
    value = row.get("results")
    if isinstance(value, dict):
        return value
    try:
        parsed = ast.literal_eval(value) if isinstance(value, str) else None
    except (ValueError, SyntaxError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def diagnosis(results: dict) -> str:
    """The diagnosis or complaints, from whichever of the layouts the annotators used; "NA" if none."""
    if "procedure" in results:
        procedure = results["procedure"] or {}
        if "chief_complaints_diagnosis" in procedure:
            return str(procedure["chief_complaints_diagnosis"])
        if "chief_complaints" in procedure and "diagnosis" in procedure:
            return f"Complains: {procedure['chief_complaints']}. Diagnosis: {procedure['diagnosis']}"
        return "NA"
    if "prescription_details" in results:
        details = results["prescription_details"]
        return str(details.get("disease_diagnosis", "NA")) if isinstance(details, dict) else "NA"
    if "Symptoms/Complaints" in results:
        return ", ".join(map(str, results["Symptoms/Complaints"]))
    return "NA"


def _lines(items: list[dict], keys: tuple[str, ...]) -> list[str]:
    return [", ".join([str(item[keys[0]])] + [str(item[k]).lower() for k in keys[1:]]) for item in items]


def medicines(results: dict) -> list[str]:
    """The prescription's medicine lines "name, frequency, duration" (as much of it as was written)."""
    lines: list[str] = []
    details = results.get("medicine_details")
    prescribed = results.get("Medicines Prescribed")
    try:
        if details:
            first = details[0]
            detailed = [item for item in details if len(item) > 1]
            if "medicine_frequency" in first:
                if "course_duration" in first:
                    lines = _lines(detailed, ("medicine_name", "medicine_frequency", "course_duration"))
                else:
                    lines = _lines(detailed, ("medicine_name", "medicine_frequency"))
            elif "medicine_dosage" in first:
                lines = _lines(details, ("medicine_name", "medicine_dosage"))
        elif prescribed:
            first = prescribed[0]
            for key in ("Duration", "Dosage"):
                if key in first:
                    lines = _lines(prescribed, ("Name", key))
                    break
    except (KeyError, TypeError, AttributeError):
        lines = []  # one malformed item spoils the prescription, as in lm-eval
    for filler in FILLERS:
        lines = [line.replace(filler, "") for line in lines]
    lines = [line for line in lines if len(line) > 1]
    return [] if TEMPLATE_LINE in lines else lines


def _usable(row: dict) -> tuple[str, list[str]] | None:
    results = parse_results(row)
    diag, lines = diagnosis(results), medicines(results)
    if INDIAN_SCRIPTS.search(diag):
        diag = "NA"
    if any(INDIAN_SCRIPTS.search(line) for line in lines):
        lines = []
    return (diag, lines) if diag != "NA" and lines else None


def _fake_line(name: str, rng: random.Random) -> str:
    return f"{name}, {rng.choice(FAKE_FREQUENCIES)}, {rng.choice(FAKE_DURATIONS)}"


def hard_distractors(gold: str, lines: list[str], rng: random.Random) -> list[str]:
    """Names of the same prescription (or the gold's own, half of the time first) with made-up frequency and duration."""
    gold_name = gold.split(",")[0]
    names = [line.split(",")[0] for line in lines if line != gold]
    bases = ([gold_name] if rng.randint(0, 1) == 0 else []) + names
    bases = (bases + [names[0] if names else gold_name] * N_OPTIONS)[: N_OPTIONS - 1]
    distractors = []
    for base in bases:
        line = _fake_line(base, rng)
        for _ in range(20):  # a made-up line equal to the gold would make two right answers
            if line != gold and line not in distractors:
                break
            line = _fake_line(base, rng)
        distractors.append(line)
    return distractors


def indexed_rows(rows: list[dict], hard: bool) -> list[tuple[int, dict]]:
    """(index of the source row, question row) for each usable row."""
    usable = [(index, found) for index, found in ((i, _usable(row)) for i, row in enumerate(rows)) if found]
    pool = sorted({line for _, (_, lines) in usable for line in lines})
    out = []
    for index, (diag, lines) in usable:
        rng = random.Random(f"{SEED}:{index}")
        gold = rng.choice(lines)
        position = rng.randrange(N_OPTIONS)
        if hard:
            distractors = hard_distractors(gold, lines, rng)
        else:
            candidates = [line for line in pool if line != gold]
            distractors = rng.sample(candidates, min(N_OPTIONS - 1, len(candidates)))
        options = distractors[:position] + [gold] + distractors[position:]
        out.append(
            (
                index,
                {
                    "id": str(rows[index].get("id", index)),
                    "diagnosis": diag,
                    "options": options,
                    "gold_position": options.index(gold),
                },
            )
        )
    return out


def easy_rows(rows: list[dict]) -> list[dict]:
    return [row for _, row in indexed_rows(rows, hard=False)]


def hard_rows(rows: list[dict]) -> list[dict]:
    return [row for _, row in indexed_rows(rows, hard=True)]
