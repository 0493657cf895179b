"""Rows skipped at normalisation (`on_bad_row: skip`) are counted in the summary's n_skipped, not only in a log."""

import json

import polars as pl
import pytest

from careval.analysis.aggregate import MCQA_AVERAGE, ScoreFile, write_summary
from careval.datasets import build_benchmark, get_benchmark
from careval.datasets.normalise import report_path
from careval.schemas import SCORE_SCHEMA


def _benchmark(tmp_path, name, answers):
    """A demo_mcqa-shaped benchmark file normalised with on_bad_row: skip (an answer of 9 is malformed)."""
    rows = [
        {"id": f"{name}{i}", "question": f"q{i}?", "options": ["x", "y"], "answer": a} for i, a in enumerate(answers)
    ]
    source = tmp_path / f"{name}.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    samples_path = tmp_path / "datasets" / f"{name}.parquet"
    samples = build_benchmark(get_benchmark("demo_mcqa", {"path": str(source), "on_bad_row": "skip"}), samples_path)
    scores = tmp_path / "scores" / "m" / name / "accuracy.parquet"
    scores.parent.mkdir(parents=True)
    pl.DataFrame(
        [
            {"id": i, "metric": "acc", "value": 1.0, "status": "ok", "level": "sample", "weight": 1.0}
            for i in samples["id"]
        ],
        schema=SCORE_SCHEMA,
    ).write_parquet(scores)
    return ScoreFile("m", name, "mcqa", scores), report_path(samples_path)


def test_n_skipped_per_benchmark_and_summed_in_the_mcqa_average(tmp_path):
    # the normalised benchmark is named demo_mcqa in its report; two copies under two names stand for two benchmarks
    file_a, report_a = _benchmark(tmp_path, "bench_a", [0, 9, 1, 9, 0])
    file_b, report_b = _benchmark(tmp_path, "bench_b", [0, 1, 9])
    for report, name in ((report_a, "bench_a"), (report_b, "bench_b")):
        report.write_text(report.read_text().replace('"benchmark": "demo_mcqa"', f'"benchmark": "{name}"'))
    summary = write_summary([file_a, file_b], tmp_path / "summary.parquet", dataset_reports=[report_a, report_b])
    got = {
        (row["benchmark"], row["metric"]): (row["n"], row["n_failed"], row["n_skipped"])
        for row in summary.iter_rows(named=True)
    }
    assert got == {("bench_a", "acc"): (3, 0, 2), ("bench_b", "acc"): (2, 0, 1), (MCQA_AVERAGE, "acc"): (5, 0, 3)}
    assert pl.read_parquet(tmp_path / "summary.parquet")["n_skipped"].to_list() == [2, 1, 3]


def test_without_the_reports_n_skipped_is_unknown_not_zero(tmp_path):
    file_a, _ = _benchmark(tmp_path, "bench_a", [0, 9, 1])
    summary = write_summary([file_a], tmp_path / "summary.parquet")
    assert summary["n_skipped"].to_list() == [None, None]


def test_a_benchmark_without_its_report_is_an_error(tmp_path):
    file_a, report_a = _benchmark(tmp_path, "bench_a", [0, 1])
    with pytest.raises(ValueError) as error:
        write_summary([file_a], tmp_path / "summary.parquet", dataset_reports=[report_a])  # the report says demo_mcqa
    assert str(error.value) == "no normalisation report for benchmark(s) bench_a"
