"""Relation extraction (BioRED): (entity, entity, relation type) triples parsed from a generation, against the gold relations.

The model writes one relation per line, "entity 1 | entity 2 | type". A predicted triple matches
a gold relation when the types are equal and the two names are mentions of the relation's two
concepts, in either order (BioRED relations are undirected). Each gold relation is matched once.

Precision, recall and F1 are per document (sample rows) and micro-averaged over the corpus
(corpus rows, which the summary reports).

`acc` is our reading of the accuracy the paper reports for BioRED. Table 1 lists accuracy for
every close-ended task without defining it; the paper's source (YufeiHFUT/BioRED*) poses the task
as relation classification of an entity pair, with "no relation" as a class. So: every unordered
pair of concepts annotated in the document gets a gold label (its relation type, or none) and a
predicted label (the type the model states for two of the concepts' mention names, or none);
`acc` is the fraction of pairs labelled right. It is weighted by the document's number of pairs,
so the summary's weighted mean is the accuracy over all pairs of the corpus. Pairs without a
relation are the majority, so `acc` is high for a model that states little; read it with F1.
"""

from __future__ import annotations

import json
import math
import re

import polars as pl

from careval.schemas import SCORE_SCHEMA

RELATION_TYPES = (
    "Association",
    "Positive_Correlation",
    "Negative_Correlation",
    "Bind",
    "Cotreatment",
    "Comparison",
    "Drug_Interaction",
    "Conversion",
)
_TYPE_KEYS = {re.sub(r"[\s_-]+", "", t).casefold(): t for t in RELATION_TYPES}
_NONE_ANSWERS = {"none", "no relations", "no relation", "(none)", "n/a"}


def normal_name(name: str) -> str:
    return " ".join(name.casefold().strip(" .;:'\"*-").split())


def relation_type(text: str) -> str | None:
    return _TYPE_KEYS.get(re.sub(r"[\s_-]+", "", text.strip(" .;:'\"*")).casefold())


def parse_triples(output: str) -> list[tuple[str, str, str]] | None:
    """The distinct triples of a generation; [] for an explicit "none"; None when no line has the triple form."""
    triples: list[tuple[str, str, str]] = []
    for line in output.splitlines():
        parts = [part.strip() for part in line.strip().lstrip("-*0123456789. ").split("|")]
        if len(parts) != 3 or not parts[0] or not parts[1]:
            continue
        kind = relation_type(parts[2])
        triple = (normal_name(parts[0]), normal_name(parts[1]), kind) if kind else None
        if triple and triple not in triples:
            triples.append(triple)
    if triples:
        return triples
    return [] if normal_name(output) in _NONE_ANSWERS else None


def _gold_names(gold: list[dict]) -> list[tuple[set[str], set[str], str]]:
    return [({normal_name(n) for n in g["entity1"]}, {normal_name(n) for n in g["entity2"]}, g["type"]) for g in gold]


def true_positives(predicted: list[tuple[str, str, str]], gold: list[dict]) -> int:
    """Predicted triples matched to distinct gold relations (same type, the two names of its two concepts)."""
    gold_names = _gold_names(gold)
    used: set[int] = set()
    for e1, e2, kind in predicted:
        for index, (names1, names2, gold_kind) in enumerate(gold_names):
            if (
                index not in used
                and kind == gold_kind
                and ((e1 in names1 and e2 in names2) or (e1 in names2 and e2 in names1))
            ):
                used.add(index)
                break
    return len(used)


def pair_accuracy(
    predicted: list[tuple[str, str, str]], gold: list[dict], entities: dict[str, list[str]]
) -> tuple[int, int]:
    """(pairs labelled right, pairs): every unordered pair of the document's concepts, "no relation" included."""
    concepts = sorted(entities)
    ids_of: dict[str, set[str]] = {}
    for concept, names in entities.items():
        for name in names:
            ids_of.setdefault(normal_name(name), set()).add(concept)
    gold_label = {}
    for relation in gold:
        gold_label.setdefault(frozenset(relation["pair"]), relation["type"])
    predicted_label: dict[frozenset, str] = {}
    for e1, e2, kind in predicted:
        for a in ids_of.get(e1, ()):
            for b in ids_of.get(e2, ()):
                if a != b:
                    predicted_label.setdefault(frozenset((a, b)), kind)  # the first type stated for a pair
    pairs = [frozenset((a, b)) for i, a in enumerate(concepts) for b in concepts[i + 1 :]]
    return sum(gold_label.get(pair) == predicted_label.get(pair) for pair in pairs), len(pairs)


def _prf(tp: int, n_predicted: int, n_gold: int) -> dict[str, float]:
    # zero_division = 0, as sklearn's default, except that nothing predicted for nothing gold is perfect
    precision = tp / n_predicted if n_predicted else float(n_gold == 0)
    recall = tp / n_gold if n_gold else float(n_predicted == 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def score_extraction(samples: pl.DataFrame, generations: pl.DataFrame) -> pl.DataFrame:
    """Per-document precision / recall / f1 / acc rows with a status, and the corpus micro P / R / F1."""
    metas = {sample_id: json.loads(meta) for sample_id, meta in zip(samples["id"], samples["meta"])}
    rows = []
    totals = {"tp": 0, "predicted": 0, "gold": 0}
    for sample_id, output, status in generations.select("id", "output", "status").iter_rows():
        meta = metas.get(sample_id, {})
        gold = meta.get("relations") or []
        predicted = parse_triples(output) if status == "ok" else None
        if status == "ok" and predicted is None:
            status = "parse_error"
        if status != "ok" or predicted is None:
            for metric in ("precision", "recall", "f1", "acc"):
                rows.append(
                    {
                        "id": sample_id,
                        "metric": metric,
                        "value": math.nan,
                        "status": status,
                        "level": "sample",
                        "weight": 1.0,
                    }
                )
            continue
        tp = true_positives(predicted, gold)
        totals["tp"] += tp
        totals["predicted"] += len(predicted)
        totals["gold"] += len(gold)
        for metric, value in _prf(tp, len(predicted), len(gold)).items():
            rows.append(
                {"id": sample_id, "metric": metric, "value": value, "status": "ok", "level": "sample", "weight": 1.0}
            )
        right, pairs = pair_accuracy(predicted, gold, meta.get("entities") or {})
        rows.append(
            {
                "id": sample_id,
                "metric": "acc",
                "value": right / pairs if pairs else math.nan,
                "status": "ok" if pairs else "no_entity_pairs",
                "level": "sample",
                "weight": float(pairs),
            }
        )
    scored = totals["predicted"] + totals["gold"] > 0
    for metric, value in _prf(totals["tp"], totals["predicted"], totals["gold"]).items():
        rows.append(
            {
                "id": None,
                "metric": metric,
                "value": value if scored else math.nan,
                "status": "ok" if scored else "no_valid_samples",
                "level": "corpus",
                "weight": 1.0,
            }
        )
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)
