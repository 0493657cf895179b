"""Human review of CareQA: how many items to review, which ones, and how far the reviewers agreed."""

from __future__ import annotations

import csv
import io
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from careval.schema import with_schema_defaults
from careval.textio import TextDecodeError, read_text

LABELS = ("correct", "incorrect")
SHEET_COLUMNS = ("item_id", "reviewer", "label")


def _z(confidence: float) -> float:
    """The two-sided normal quantile of a confidence level."""
    from scipy.stats import norm  # here, not at the top: the plan's input checks import this module (scipy.stats ~1 s)

    return float(norm.ppf(1 - (1 - confidence) / 2))


def sample_size(population: int, confidence: float = 0.95, margin: float = 0.05, p: float = 0.5) -> int:
    """Cochran's n0 = z^2 p (1-p) / e^2 with the finite-population correction n0 / (1 + (n0-1)/N), rounded up.

    p = 0.5 is the most conservative proportion; the paper's 95% / 5% over 5,621 questions gives 360.
    """
    if population < 1 or not 0 < confidence < 1 or not 0 < margin < 1 or not 0 < p < 1:
        raise ValueError(
            f"need population >= 1 and confidence, margin, p in (0, 1); got {population}, {confidence}, {margin}, {p}"
        )
    z = _z(confidence)
    n0 = z**2 * p * (1 - p) / margin**2
    # Rounding guard: 359.0000000001 from float noise must not become 360.
    return math.ceil(round(n0 / (1 + (n0 - 1) / population), 9))


def margin_of_error(n: int, population: int, confidence: float = 0.95, p: float = 0.5) -> float:
    """The margin a sample of n reaches: the inverse of sample_size, e = z sqrt(p (1-p) / n * (N-n) / (N-1))."""
    if not 1 <= n <= population:
        raise ValueError(f"need 1 <= n <= population; got n={n}, population={population}")
    if population == 1:
        return 0.0
    z = _z(confidence)
    return z * math.sqrt(p * (1 - p) / n * (population - n) / (population - 1))


def allocate(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of n over strata, rounded by largest remainder so the quotas sum to n."""
    total = sum(counts.values())
    if not 0 <= n <= total:
        raise ValueError(f"cannot draw {n} items from a population of {total}")
    exact = {name: n * size / total for name, size in counts.items()}
    quota = {name: math.floor(share) for name, share in exact.items()}
    # Ties broken by stratum name so the allocation never depends on dict order.
    by_remainder = sorted(exact, key=lambda name: (-(exact[name] - quota[name]), name))
    for name in by_remainder[: n - sum(quota.values())]:
        quota[name] += 1
    return quota


def stratified_sample(items: Iterable[tuple[str, str]], n: int, seed: int = 0) -> list[str]:
    """Draw n ids from (id, category) pairs, proportionally per category; the same seed gives the same ids."""
    by_category: dict[str, list[str]] = defaultdict(list)
    for item_id, category in items:
        by_category[category].append(item_id)
    quota = allocate({c: len(ids) for c, ids in by_category.items()}, n)
    rng = random.Random(seed)
    chosen: list[str] = []
    for category in sorted(by_category):
        # Sorting first makes the draw independent of the order the ids were given in.
        chosen.extend(rng.sample(sorted(by_category[category]), quota[category]))
    return chosen


class SheetError(ValueError):
    """A malformed annotation sheet; the message is one line naming the file, row and column."""


def _sheet_text(path: Path | str) -> str:
    try:
        return read_text(path)
    except TextDecodeError as error:
        raise SheetError(str(error)) from None


def read_sheets(paths: Iterable[Path | str]) -> dict[str, dict[str, str]]:
    """Read filled CSV sheets (item_id, reviewer, label) into {item_id: {reviewer: label}}."""
    labels: dict[str, dict[str, str]] = defaultdict(dict)
    for path in paths:
        with io.StringIO(_sheet_text(path), newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            for column in SHEET_COLUMNS:
                if column not in header:
                    raise SheetError(f"{path}: row 1, column {column!r}: missing from header {header}")
            # Rows are counted as a spreadsheet shows them: the header is row 1.
            for row_number, row in enumerate(reader, start=2):
                for column in SHEET_COLUMNS:
                    if not (row.get(column) or "").strip():
                        raise SheetError(f"{path}: row {row_number}, column {column!r}: empty")
                item, reviewer = row["item_id"].strip(), row["reviewer"].strip()
                label = row["label"].strip().lower()
                if label not in LABELS:
                    raise SheetError(
                        f"{path}: row {row_number}, column 'label': expected one of {LABELS}, got {row['label']!r}"
                    )
                if reviewer in labels[item] and labels[item][reviewer] != label:
                    raise SheetError(
                        f"{path}: row {row_number}, column 'reviewer': {reviewer!r} already labelled item {item!r}"
                        f" as {labels[item][reviewer]!r}"
                    )
                labels[item][reviewer] = label
    return dict(labels)


@dataclass(frozen=True)
class AgreementStats:
    n_items: int
    at_least_one: float
    at_least_two: float
    all_reviewers: float
    agreement: float


def agreement_stats(labels: Mapping[str, Mapping[str, str]], min_reviewers: int = 3) -> AgreementStats:
    """The four rows of the paper's Table 2, as shares of the reviewed items.

    Table 2 caption (appendix A.3): "The first row shows the percentage of correct samples tagged by at
    least one evaluator. The second row refers to samples tagged as correct by two evaluators. The third
    row indicates samples labeled as correct by all three evaluators. The last row shows the agreement
    rate among the three evaluators."
    Interpretation: "by two evaluators" is read as at least two, so the rows are nested (one >= two >= all),
    as the reported 98.6% / ... / 83.1% ordering implies; "all three" becomes all reviewers of the item,
    since each item had "at least three" (A.3); the agreement rate is the share of items whose reviewers
    all gave the same label, correct or incorrect, which the paper does not define further.
    """
    if not labels:
        raise ValueError("no reviewed items")
    counts = []
    for item, by_reviewer in labels.items():
        if len(by_reviewer) < min_reviewers:
            raise ValueError(f"item {item!r}: {len(by_reviewer)} reviewers, need at least {min_reviewers}")
        tally = Counter(by_reviewer.values())
        counts.append((tally["correct"], len(by_reviewer)))
    n = len(counts)
    return AgreementStats(
        n_items=n,
        at_least_one=sum(c >= 1 for c, _ in counts) / n,
        at_least_two=sum(c >= 2 for c, _ in counts) / n,
        all_reviewers=sum(c == k for c, k in counts) / n,
        agreement=sum(c in (0, k) for c, k in counts) / n,
    )


# What a reviewer sees for each kind of review: the item's columns after item_id, reviewer and label.
REVIEW_COLUMNS = {
    "translation": ("category", "spanish", "english", "correct_option"),
    "rephrasing": ("category", "close_question", "correct_answer", "open_question", "open_answer"),
}
REVIEW_KINDS = tuple(REVIEW_COLUMNS)


def review_items(
    kind: str, english_path: Path | str, spanish_path: Path | str, open_path: Path | str | None = None
) -> list[dict]:
    """The population of one review: every translated question, or every open-ended pair, with what to judge."""
    import polars as pl

    if kind not in REVIEW_KINDS:
        raise ValueError(f"review kind must be one of {REVIEW_KINDS}, got {kind!r}")
    english = pl.read_parquet(english_path)
    spanish = {row["unique_id"]: row for row in pl.read_parquet(spanish_path).iter_rows(named=True)}
    close = {row["unique_id"]: row for row in english.iter_rows(named=True)}

    def options(row: dict) -> str:
        return " | ".join(f"{i}. {row[f'op{i}']}" for i in range(1, 5))

    if kind == "translation":
        return [
            {
                "item_id": uid,
                "category": row["category"],
                "spanish": f"{spanish[uid]['question']} || {options(spanish[uid])}",
                "english": f"{row['question']} || {options(row)}",
                "correct_option": row["cop"],
            }
            for uid, row in close.items()
        ]
    if open_path is None:
        raise ValueError("a rephrasing review needs the open-ended set")
    return [
        {
            "item_id": row["unique_id"],
            "category": row["category"],
            "close_question": close[row["unique_id"]]["question"],
            "correct_answer": close[row["unique_id"]][f"op{close[row['unique_id']]['cop']}"],
            "open_question": row["question"],
            "open_answer": row["answer"],
        }
        for row in pl.read_parquet(open_path).iter_rows(named=True)
    ]


def export_review_sheet(
    items: list[dict],
    confidence: float,
    margin: float,
    seed: int,
    sheet_path: Path | str,
    summary_path: Path | str,
    columns: Iterable[str] = (),
) -> dict:
    """Draw the stratified sample and write a blank sheet (reviewer and label left for each reviewer's copy)."""
    import json

    population = len(items)
    n = sample_size(population, confidence, margin) if population else 0
    chosen = set(stratified_sample(((it["item_id"], it["category"]) for it in items), n, seed=seed))
    rows = sorted((it for it in items if it["item_id"] in chosen), key=lambda it: (it["category"], it["item_id"]))
    # Named up front so that an empty population still gives a sheet with the right header.
    extra = list(columns) or [c for c in (items[0] if items else {}) if c not in SHEET_COLUMNS]
    Path(sheet_path).parent.mkdir(parents=True, exist_ok=True)
    with open(sheet_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*SHEET_COLUMNS, *extra])
        writer.writeheader()
        for row in rows:
            writer.writerow({"reviewer": "", "label": "", **row})
    summary = {
        "population": population,
        "sample": n,
        "confidence": confidence,
        "margin": margin,
        "achieved_margin": margin_of_error(n, population, confidence) if n else None,
        "seed": seed,
        "per_category": dict(sorted(Counter(row["category"] for row in rows).items())),
        "instructions": f"each reviewer fills 'reviewer' and 'label' ({' or '.join(LABELS)}) in a copy of the sheet",
    }
    Path(summary_path).write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def write_agreement(sheet_paths: Iterable[Path | str], out_path: Path | str, min_reviewers: int = 3) -> dict:
    """The appendix A.3 statistics of filled sheets, overall and per category when the sheets carry one."""
    import json

    sheet_paths = list(sheet_paths)
    if not sheet_paths:
        raise SheetError("no filled review sheets given")
    labels = read_sheets(sheet_paths)
    categories: dict[str, str] = {}
    for path in sheet_paths:
        with io.StringIO(_sheet_text(path), newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("category"):
                    categories[row["item_id"].strip()] = row["category"]
    result = {"sheets": [str(p) for p in sheet_paths], "overall": agreement_stats(labels, min_reviewers).__dict__}
    by_category: dict[str, dict] = defaultdict(dict)
    for item, votes in labels.items():
        if item in categories:
            by_category[categories[item]][item] = votes
    result["per_category"] = {c: agreement_stats(v, min_reviewers).__dict__ for c, v in sorted(by_category.items())}
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(result, indent=2) + "\n")
    return result


def export_review(
    kind: str,
    english_path: Path | str,
    spanish_path: Path | str,
    open_path: Path | str,
    settings: Mapping,
    sheet_path: Path | str,
    summary_path: Path | str,
) -> dict:
    """Stage 6: the review sheet of one kind, sized and seeded by the config's careqa.review settings (those not
    given: the schema's defaults)."""
    settings = with_schema_defaults(dict(settings), "careqa.review")
    return export_review_sheet(
        review_items(kind, english_path, spanish_path, open_path),
        confidence=float(settings["confidence"]),
        margin=float(settings["margin"]),
        seed=int(settings["seed"]),
        sheet_path=sheet_path,
        summary_path=summary_path,
        columns=REVIEW_COLUMNS[kind],
    )
