"""Classification: label parsing, macro-F1 against sklearn, and scoring from log-likelihoods or generations."""

import math
import random

import polars as pl
import pytest
from sklearn.metrics import accuracy_score, f1_score

from careval.schemas import DATASET_SCHEMA, GENERATION_SCHEMA
from careval.tasks.classification import loglik_requests, macro_f1, parse_label, score_classification

CLASSES = [
    "neoplasms",
    "digestive system diseases",
    "nervous system diseases",
    "cardiovascular diseases",
    "general pathological conditions",
]


def _samples(golds):
    return pl.DataFrame(
        [
            {
                "id": f"s{i}",
                "benchmark": "b",
                "task": "classification",
                "question": f"text {i}",
                "context": None,
                "options": CLASSES,
                "answer": g,
                "reference": None,
                "meta": "{}",
            }
            for i, g in enumerate(golds)
        ],
        schema=DATASET_SCHEMA,
    )


@pytest.mark.parametrize("seed", range(5))
def test_macro_f1_matches_sklearn(seed):
    rng = random.Random(seed)
    gold = [rng.randrange(5) for _ in range(40)]
    predicted = [g if rng.random() < 0.5 else rng.randrange(4) for g in gold]  # class 4 never predicted
    assert macro_f1(gold, predicted) == pytest.approx(f1_score(gold, predicted, average="macro"))


def test_parse_label():
    assert parse_label("C. nervous system diseases", CLASSES) == 2
    assert parse_label("(B)", CLASSES) == 1
    assert parse_label("The topic is Cardiovascular Diseases.", CLASSES) == 3
    # the first class named in the text, and the longest one at the same place
    assert parse_label("neoplasms, not digestive system diseases", CLASSES) == 0
    assert parse_label("Neurosurgery", ["Surgery", "Neurosurgery"]) == 1
    assert parse_label("I cannot tell.", CLASSES) is None


def test_loglik_mode_scores_the_most_likely_class():
    samples = _samples([0, 2, 4])
    requests = loglik_requests(samples, "{question}\nChoices:\n{options}\nAnswer:")
    assert requests.height == 15 and requests["continuation"][1] == " digestive system diseases"
    assert "B. digestive system diseases" in requests["context"][0]
    # s0 -> class 0 (right), s1 -> class 1 (wrong), s2 -> class 4 (right)
    lls = [-1, -5, -5, -5, -5, -5, -1, -5, -5, -5, -5, -5, -5, -5, -1]
    scores = score_classification(samples, logliks=requests.with_columns(pl.Series("loglik", lls, dtype=pl.Float64)))
    acc = scores.filter(pl.col("metric") == "acc")["value"].to_list()
    assert acc == [1.0, 0.0, 1.0]
    f1 = scores.filter(pl.col("metric") == "macro_f1")
    assert f1["level"][0] == "corpus" and f1["value"][0] == pytest.approx(
        f1_score([0, 2, 4], [0, 1, 4], average="macro")
    )


def test_generate_mode_counts_parse_errors_instead_of_scoring_them():
    samples = _samples([0, 2, 3, 1])
    outputs = ["A", "nervous system diseases", "no idea", ""]
    generations = pl.DataFrame(
        {"id": samples["id"], "prompt": ["p"] * 4, "output": outputs, "status": ["ok", "ok", "ok", "empty_output"]}
        | dict.fromkeys(("prompt_tokens", "generated_tokens", "cut_tokens"), [None] * 4),
        schema=GENERATION_SCHEMA,
    )
    scores = score_classification(samples, generations=generations)
    acc = scores.filter(pl.col("metric") == "acc")
    assert acc["status"].to_list() == ["ok", "ok", "parse_error", "empty_output"]
    assert acc["value"][:2].to_list() == [1.0, 1.0] and all(math.isnan(v) for v in acc["value"][2:])
    ok = acc.filter(pl.col("status") == "ok")
    assert ok["value"].mean() == accuracy_score([0, 2], [0, 2])
    assert scores.filter(pl.col("metric") == "macro_f1")["value"][0] == pytest.approx(1.0)
