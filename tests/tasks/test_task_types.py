"""Task types in the pipeline: which requests each benchmark makes, scoring dispatch, and the MCQA-only average."""

import json

import polars as pl
import pytest

from careval.analysis.aggregate import MCQA_AVERAGE, ScoreFile, build_summary
from careval.datasets import REGISTRY, get_benchmark
from careval.datasets.benchmark import TASKS
from careval.inference import loglik_requests
from careval.metrics.registry import TASK_FAMILIES as TASK_METRICS
from careval.schemas import DATASET_SCHEMA
from careval.scoring import family_scores


def _choice_samples(task, n_options=3):
    options = [f"option {i}" for i in range(n_options)]
    return pl.DataFrame(
        [
            {
                "id": "a",
                "benchmark": "b",
                "task": task,
                "question": "q",
                "context": None,
                "options": options,
                "answer": 1,
                "reference": None,
                "meta": "{}",
            }
        ],
        schema=DATASET_SCHEMA,
    )


def test_every_entry_has_a_known_task_and_metric_families():
    assert set(TASK_METRICS) >= set(TASKS)
    assert {entry.task for entry in REGISTRY.values()} == set(TASKS)


@pytest.mark.parametrize(
    "name, overrides, generates, n_requests",
    [
        ("medqa", {}, False, 3),
        ("prescription_easy", {}, False, 3),
        ("medical_text_classification", {}, False, 3),
        ("medical_text_classification", {"mode": "generate"}, True, 0),
        ("biored", {}, True, 0),
    ],
)
def test_generating_or_loglik_only(name, overrides, generates, n_requests):
    entry = get_benchmark(name, overrides)
    assert entry.generates is generates
    samples = (
        _choice_samples(entry.task)
        if entry.task != "extraction"
        else _choice_samples("extraction").with_columns(
            options=pl.lit(None, dtype=pl.List(pl.String)), reference=pl.lit("x | y | Bind")
        )
    )
    assert loglik_requests(samples, entry).height == n_requests


def test_family_scores_dispatches_the_new_families():
    samples = _choice_samples("classification")
    generations = pl.DataFrame({"id": ["a"], "prompt": ["p"], "output": ["option 1"], "status": ["ok"]})
    scores = family_scores("classification", samples, generations, None)
    assert set(scores["metric"]) == {"acc", "macro_f1"} and scores.filter(pl.col("metric") == "acc")["value"][0] == 1.0
    meta = json.dumps(
        {
            "relations": [{"pair": ["1", "2"], "entity1": ["x"], "entity2": ["y"], "type": "Bind"}],
            "entities": {"1": ["x"], "2": ["y"]},
        }
    )
    extraction = _choice_samples("extraction").with_columns(meta=pl.lit(meta))
    scores = family_scores(
        "relation_extraction", extraction, generations.with_columns(output=pl.lit("x | y | Bind")), None
    )
    corpus = scores.filter(pl.col("level") == "corpus")
    assert dict(zip(corpus["metric"], corpus["value"])) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_weighted_mcqa_average_uses_mcqa_benchmarks_only(tmp_path):
    def write(name, values):
        path = tmp_path / f"{name}.parquet"
        pl.DataFrame(
            {
                "id": [str(i) for i in range(len(values))],
                "metric": ["acc"] * len(values),
                "value": values,
                "status": ["ok"] * len(values),
                "level": ["sample"] * len(values),
                "weight": [1.0] * len(values),
            }
        ).write_parquet(path)
        return path

    files = [
        ScoreFile("m", "medqa", "mcqa", write("medqa", [1.0, 0.0, 1.0, 1.0])),
        ScoreFile("m", "pubmedqa", "mcqa", write("pubmedqa", [0.0, 0.0])),
        ScoreFile("m", "prescription_easy", "prescription", write("rx", [1.0] * 10)),
        ScoreFile("m", "medical_text_classification", "classification", write("tc", [1.0] * 10)),
    ]
    summary = build_summary(files)
    average = summary.filter((pl.col("benchmark") == MCQA_AVERAGE) & (pl.col("metric") == "acc"))
    assert average["value"][0] == pytest.approx(3 / 6) and average["n"][0] == 6
    assert set(summary.filter(pl.col("task") == "prescription")["benchmark"]) == {"prescription_easy"}
