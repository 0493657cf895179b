"""Prescription writing (the paper's task, lm-eval med_prescriptions): pick the prescribed medicine among four.

As the authors' lm-eval 0.4.13 files (med_prescriptions/utils.py) build it, step for step: a row is
kept when it has a diagnosis and medicine lines ("name, frequency, duration") and neither is in an
Indian script; the gold is one of its lines (random.choice) at a random position (randint(0, 3))
among three distractors. Easy distractors are three lines sampled from the authors' fixed list
(FULL_MED_LIST, read from prescription_pool.json); hard ones keep medicine names of the same prescription (or the
gold's own) with a made-up frequency and duration, by the authors' branches and draws. Their
doc_to_choice draws anew on every call, so the options their prompt lists ("A. ... \n") are one
draw and the continuations scored another (the gold alone is the same, at the same position):
careval keeps both draws, the listed ones rendered into the sample's context. The authors draw from
Python's unseeded global `random`; here each draw is a random.Random seeded by SEED, the draw's
purpose (gold, listed, scored) and the row's position in the file, so a rerun asks the same
questions and the same row is asked the same whatever rows surround it. Scoring is MCQA's acc.
"""

from __future__ import annotations

import ast
import json
import random
import re
from importlib import resources

from careval.tasks.prompts import render_options

# The authors' pool of easy-prescription distractors: lm-eval 0.4.13's med_prescriptions/utils.py `full_med_list`,
# as data, verbatim: order and duplicates included ("NA" many times, lines with U+FFFD where the source text was
# garbled), since a seeded `random.sample` picks the same lines only from the same list in the same order.
# tests/tasks/test_prescription.py checks it equals lm-eval's list.
FULL_MED_LIST: tuple[str, ...] = tuple(
    json.loads(resources.files("careval.tasks").joinpath("prescription_pool.json").read_text(encoding="utf-8"))
)

# The authors' lists of made-up durations and frequencies for the hard distractors (order matters: seeded draws).
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
    # the name as formatted, the rest lower-cased: a value that is not text (None) spoils the prescription
    return [", ".join([f"{item[keys[0]]}"] + [item[k].lower() for k in keys[1:]]) for item in items]


def _first_of(attempts) -> list[str]:
    """The lines of the first attempt that reads every item; [] when none does (the authors' nested try)."""
    for attempt in attempts:
        try:
            return attempt()
        except (KeyError, TypeError, AttributeError):
            continue
    return []


def medicines(results: dict) -> list[str]:
    """The prescription's medicine lines "name, frequency, duration" (as much of it as was written), read
    as the authors' get_medicines_list reads them, layout by layout."""
    lines: list[str] = []
    details = results.get("medicine_details")
    if details and isinstance(details, list):
        first = details[0] if isinstance(details[0], dict) else {}
        detailed = [item for item in details if isinstance(item, dict) and len(item) > 1]
        if "medicine_frequency" in first:
            fallback = []
            if "course_duration" not in first:  # their fallback when the three-field lines fail
                fallback = [lambda: _lines(detailed, ("medicine_name", "medicine_frequency"))]
            lines = _first_of(
                [lambda: _lines(detailed, ("medicine_name", "medicine_frequency", "course_duration")), *fallback]
            )
        elif "medicine_dosage" in first:
            lines = _first_of([lambda: _lines(details, ("medicine_name", "medicine_dosage"))])
    elif isinstance(results.get("Medicines Prescribed"), list) and results["Medicines Prescribed"]:
        prescribed = results["Medicines Prescribed"]
        first = prescribed[0] if isinstance(prescribed[0], dict) else {}
        for key in ("Duration", "Dosage"):
            if key in first:
                lines = _first_of([lambda key=key: _lines(prescribed, ("Name", key))])
                break
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


def _fake_lines(names: list[str], rng: random.Random, k: int) -> list[str]:
    durations, frequencies = rng.choices(FAKE_DURATIONS, k=k), rng.choices(FAKE_FREQUENCIES, k=k)
    return [f"{name}, {frequency}, {duration}" for name, frequency, duration in zip(names, frequencies, durations)]


def hard_distractors(gold: str, lines: list[str], rng: random.Random) -> list[str]:
    """The authors' doc_to_choice_hard, draw for draw: half of the time the gold's name with a made-up
    frequency and duration first, then names of the prescription's other lines (repeated, or the gold's,
    where there are too few), each with made-up ones."""
    name = gold.split(",")[0]
    others = [line.split(",")[0] for line in lines if line != gold]
    if rng.randint(0, 1) == 0:
        duration, frequency = rng.sample(FAKE_DURATIONS, 1), rng.sample(FAKE_FREQUENCIES, 1)
        first = [f"{name}, {frequency[0]}, {duration[0]}"]
        names = others[:2] if len(others) >= 2 else (others * 2 if others else [name, name])
        return first + _fake_lines(names, rng, 2)
    if len(others) >= 3:
        names = others[:3]
    elif len(others) == 2:
        names = [others[0], others[0], others[1]]
    else:
        names = (others or [name]) * 3
    return _fake_lines(names, rng, 3)


def easy_distractors(rng: random.Random) -> list[str]:
    """The authors' doc_to_choice_easy: three lines of their fixed list (the gold's own line may be one)."""
    return rng.sample(FULL_MED_LIST, N_OPTIONS - 1)


def draw(purpose: str, index: int) -> random.Random:
    """The seeded source of one of a row's draws (gold, listed, scored), as the authors' `random` once per call."""
    return random.Random(f"{SEED}:{purpose}:{index}")


def choices(gold: str, position: int, lines: list[str], hard: bool, rng: random.Random) -> list[str]:
    distractors = hard_distractors(gold, lines, rng) if hard else easy_distractors(rng)
    return distractors[:position] + [gold] + distractors[position:]


def indexed_rows(rows: list[dict], hard: bool) -> list[tuple[int, dict]]:
    """(index of the source row, question row) for each usable row: the diagnosis, the options scored,
    the gold's position and `listed`, the options the prompt lists (the authors' other draw)."""
    out = []
    for index, row in enumerate(rows):
        found = _usable(row)
        if found is None:
            continue
        diag, lines = found
        gold_draw = draw("gold", index)
        gold = gold_draw.choice(lines)
        position = gold_draw.randint(0, N_OPTIONS - 1)
        listed = choices(gold, position, lines, hard, draw("listed", index))
        out.append(
            (
                index,
                {
                    "id": str(row.get("id", index)),
                    "diagnosis": diag,
                    "options": choices(gold, position, lines, hard, draw("scored", index)),
                    "gold_position": position,
                    # the authors' "A. {} \n" lines: a space ends each option
                    "listed": render_options(listed, spaced=True),
                },
            )
        )
    return out


def easy_rows(rows: list[dict]) -> list[dict]:
    return [row for _, row in indexed_rows(rows, hard=False)]


def hard_rows(rows: list[dict]) -> list[dict]:
    return [row for _, row in indexed_rows(rows, hard=True)]
