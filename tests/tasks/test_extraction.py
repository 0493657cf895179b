"""BioRED relation extraction: triple parsing, precision / recall / F1 and pair accuracy, by hand."""

import json
import math

import polars as pl
import pytest

from careval.schemas import DATASET_SCHEMA, GENERATION_SCHEMA
from careval.tasks.extraction import pair_accuracy, parse_triples, score_extraction, true_positives

# concepts: G (SCN5A), D1 (long QT syndrome / LQTS), D2 (bradycardia), C (lidocaine)
ENTITIES = {"G": ["SCN5A"], "D1": ["long QT syndrome", "LQTS"], "D2": ["bradycardia"], "C": ["lidocaine"]}
GOLD = [
    {"pair": ["G", "D1"], "entity1": ["SCN5A"], "entity2": ["long QT syndrome", "LQTS"], "type": "Association"},
    {"pair": ["C", "D2"], "entity1": ["lidocaine"], "entity2": ["bradycardia"], "type": "Negative_Correlation"},
]


def test_parse_triples():
    text = (
        "1. LQTS | SCN5A | association\n- lidocaine | bradycardia | Positive Correlation\nnot a triple\nx | y | Unknown"
    )
    assert parse_triples(text) == [
        ("lqts", "scn5a", "Association"),
        ("lidocaine", "bradycardia", "Positive_Correlation"),
    ]
    assert parse_triples("None.") == []
    assert parse_triples("I am not sure what the relations are") is None


def test_counts_by_hand():
    predicted = parse_triples(
        "LQTS | SCN5A | Association\nlidocaine | bradycardia | Positive_Correlation\nSCN5A | bradycardia | Association"
    )
    # only the first predicted triple matches a gold relation (either order, any mention name)
    assert true_positives(predicted, GOLD) == 1
    # 4 concepts -> 6 pairs. Gold: G-D1 Association, C-D2 Negative; the rest none.
    # Predicted: G-D1 Association (right), C-D2 Positive (wrong), G-D2 Association (wrong: gold none),
    # the other 3 pairs none = none (right) -> 4 of 6.
    assert pair_accuracy(predicted, GOLD, ENTITIES) == (4, 6)


def test_score_extraction_rows_and_corpus_micro_average():
    samples = pl.DataFrame(
        [
            {
                "id": d,
                "benchmark": "biored",
                "task": "extraction",
                "question": "abstract",
                "context": None,
                "options": None,
                "answer": None,
                "reference": "r",
                "meta": json.dumps({"relations": GOLD, "entities": ENTITIES}),
            }
            for d in ("d1", "d2", "d3")
        ],
        schema=DATASET_SCHEMA,
    )
    outputs = [
        "SCN5A | long QT syndrome | Association\nSCN5A | bradycardia | Bind",
        "lidocaine | bradycardia | Negative_Correlation",
        "no idea",
    ]
    generations = pl.DataFrame(
        {"id": ["d1", "d2", "d3"], "prompt": ["p"] * 3, "output": outputs, "status": ["ok"] * 3}
        | dict.fromkeys(("prompt_tokens", "generated_tokens", "cut_tokens"), [None] * 3),
        schema=GENERATION_SCHEMA,
    )
    scores = score_extraction(samples, generations)
    sample = {(r["id"], r["metric"]): r for r in scores.filter(pl.col("level") == "sample").iter_rows(named=True)}
    # d1: 2 predicted, 1 right, 2 gold -> P 1/2, R 1/2, F1 1/2; d2: P 1, R 1/2, F1 2/3
    assert sample[("d1", "precision")]["value"] == 0.5 and sample[("d1", "recall")]["value"] == 0.5
    assert sample[("d2", "f1")]["value"] == pytest.approx(2 / 3)
    assert sample[("d3", "f1")]["status"] == "parse_error" and math.isnan(sample[("d3", "f1")]["value"])
    # d1 pairs: G-D1 right, G-D2 Bind vs none wrong, C-D2 none vs Negative wrong, 3 others right -> 4/6
    assert sample[("d1", "acc")]["value"] == pytest.approx(4 / 6) and sample[("d1", "acc")]["weight"] == 6
    corpus = {r["metric"]: r["value"] for r in scores.filter(pl.col("level") == "corpus").iter_rows(named=True)}
    # micro over d1 and d2: tp 2, predicted 3, gold 4
    assert corpus["precision"] == pytest.approx(2 / 3) and corpus["recall"] == pytest.approx(2 / 4)
    assert corpus["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
