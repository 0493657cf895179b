"""Text classification: the label by log-likelihood over the class names or parsed from a generation; accuracy and macro-F1.

`mode: loglik` (lm-eval's med_text_classification, output_type multiple_choice) scores each class
name as a continuation of the prompt and predicts the most likely one; `mode: generate` parses the
class out of the model's text. A generation naming no class is a counted `parse_error`, not a
wrong answer. Macro-F1 is computed over the samples scored ok, with sklearn's conventions: the
classes are those in the gold or predicted labels, a class never predicted has F1 0.
"""

from __future__ import annotations

import math
import re

import polars as pl

from careval.metrics.accuracy import mcqa_predictions
from careval.schemas import SCORE_SCHEMA
from careval.tasks.mcqa import loglik_requests  # noqa: F401  (the same requests: one per class name)

_LETTER = re.compile(r"^\W*\(?([A-Z])\)?(?:[.):]|\s|$)")


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w/]+", " ", text.casefold()).split())


def parse_label(output: str, classes: list[str]) -> int | None:
    """The class a generation names: a leading option letter ("B." / "(B)"), else the class name found
    first in the text (the longest at the same place, so "Neurosurgery" wins over "Surgery"); None if none."""
    letter = _LETTER.match(output.strip())
    if letter and len(classes) <= 26:
        index = ord(letter.group(1)) - ord("A")
        if 0 <= index < len(classes):
            return index
    text = f" {_normal(output)} "
    found = []
    for index, name in enumerate(classes):
        position = text.find(f" {_normal(name)} ")
        if position >= 0:
            found.append((position, -len(name), index))
    return min(found)[2] if found else None


def macro_f1(gold: list[int], predicted: list[int]) -> float:
    """Unweighted mean of per-class F1 over the classes present in gold or predictions (sklearn's default)."""
    if not gold:
        return math.nan
    scores = []
    for label in sorted(set(gold) | set(predicted)):
        tp = sum(g == label and p == label for g, p in zip(gold, predicted))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted))
        scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores)


def _predictions_from_logliks(samples: pl.DataFrame, logliks: pl.DataFrame) -> dict[str, tuple[int | None, str]]:
    by_id = {key[0]: group.sort("option") for key, group in logliks.filter(pl.col("kind") == "option").group_by("id")}
    predictions = {}
    for sample in samples.iter_rows(named=True):
        group = by_id.get(sample["id"])
        if (
            group is None
            or group.height != len(sample["options"])
            or not all(math.isfinite(v) for v in group["loglik"])
        ):
            predictions[sample["id"]] = (None, "invalid_loglik")
        else:
            predictions[sample["id"]] = (mcqa_predictions([group["loglik"].to_list()], [sample["options"]])[0][0], "ok")
    return predictions


def _predictions_from_generations(
    samples: pl.DataFrame, generations: pl.DataFrame
) -> dict[str, tuple[int | None, str]]:
    options = dict(zip(samples["id"], samples["options"]))
    predictions = {}
    for sample_id, output, status in generations.select("id", "output", "status").iter_rows():
        if status != "ok":
            predictions[sample_id] = (None, status)
            continue
        label = parse_label(output, list(options[sample_id]))
        predictions[sample_id] = (label, "ok" if label is not None else "parse_error")
    return predictions


def score_classification(
    samples: pl.DataFrame, generations: pl.DataFrame | None = None, logliks: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per-sample `acc` rows with a status, and the corpus `macro_f1` over the samples scored ok."""
    if generations is not None:
        predictions = _predictions_from_generations(samples, generations)
    elif logliks is not None:
        predictions = _predictions_from_logliks(samples, logliks)
    else:
        raise ValueError("classification needs generations (mode: generate) or log-likelihoods (mode: loglik)")
    rows, gold, predicted = [], [], []
    for sample in samples.iter_rows(named=True):
        label, status = predictions.get(sample["id"], (None, "missing_output"))
        ok = status == "ok"
        rows.append(
            {
                "id": sample["id"],
                "metric": "acc",
                "value": float(label == sample["answer"]) if ok else math.nan,
                "status": status,
                "level": "sample",
                "weight": 1.0,
            }
        )
        if ok:
            gold.append(sample["answer"])
            predicted.append(label)
    rows.append(
        {
            "id": None,
            "metric": "macro_f1",
            "value": macro_f1(gold, predicted),
            "status": "ok" if gold else "no_valid_samples",
            "level": "corpus",
            "weight": 1.0,
        }
    )
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)
