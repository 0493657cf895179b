"""The summary table: corpus values where defined, weighted means otherwise, failures counted, MCQA weighted average."""

import math

import polars as pl
import pytest

from careval.analysis.aggregate import MCQA_AVERAGE, ScoreFile, build_summary, summarise_scores
from careval.schemas import SCORE_SCHEMA


def _scores(rows):
    return pl.DataFrame([{"level": "sample", "weight": 1.0, **r} for r in rows], schema=SCORE_SCHEMA)


def test_failed_samples_are_counted_not_scored_zero():
    scores = _scores(
        [
            {"id": "a", "metric": "rouge1", "value": 0.5, "status": "ok"},
            {"id": "b", "metric": "rouge1", "value": 0.25, "status": "ok"},
            {"id": "c", "metric": "rouge1", "value": float("nan"), "status": "empty_output"},
        ]
    )
    [row] = summarise_scores(scores)
    assert row == {"metric": "rouge1", "value": 0.375, "n": 2, "n_failed": 1}


def test_corpus_value_wins_over_the_mean_and_weights_apply():
    scores = _scores(
        [
            {"id": "a", "metric": "word_perplexity", "value": 2.0, "status": "ok", "weight": 1.0},
            {"id": "b", "metric": "word_perplexity", "value": 8.0, "status": "ok", "weight": 3.0},
            {"id": None, "metric": "word_perplexity", "value": 5.5, "status": "ok", "level": "corpus"},
            {"id": "a", "metric": "bits_per_byte", "value": 1.0, "status": "ok", "weight": 1.0},
            {"id": "b", "metric": "bits_per_byte", "value": 2.0, "status": "ok", "weight": 3.0},
        ]
    )
    rows = {r["metric"]: r for r in summarise_scores(scores)}
    assert rows["word_perplexity"]["value"] == 5.5
    assert rows["bits_per_byte"]["value"] == pytest.approx((1 * 1 + 2 * 3) / 4)


def test_mcqa_weighted_average_by_hand(tmp_path):
    files = []
    for benchmark, correct in [("bench_a", [1, 1, 0, 0]), ("bench_b", [1] * 9 + [0])]:
        path = tmp_path / f"{benchmark}.parquet"
        _scores(
            [{"id": str(i), "metric": "acc", "value": float(v), "status": "ok"} for i, v in enumerate(correct)]
        ).write_parquet(path)
        files.append(ScoreFile("m", benchmark, "mcqa", path))
    summary = build_summary(files)
    average = summary.filter((pl.col("benchmark") == MCQA_AVERAGE) & (pl.col("metric") == "acc"))
    # (0.5 * 4 + 0.9 * 10) / 14, not the plain mean of 0.5 and 0.9
    assert average["value"][0] == pytest.approx(11 / 14)
    assert average["n"][0] == 14
    assert not math.isclose(average["value"][0], 0.7)


def test_relaxed_perplexity_averages_geometrically_as_the_registry_says():
    scores = _scores(
        [
            {"id": "a", "metric": "relaxed_perplexity", "value": 2.0, "status": "ok"},
            {"id": "b", "metric": "relaxed_perplexity", "value": 8.0, "status": "ok"},
            {"id": "a", "metric": "relaxed_cross_entropy", "value": 2.0, "status": "ok"},
            {"id": "b", "metric": "relaxed_cross_entropy", "value": 8.0, "status": "ok"},
        ]
    )
    rows = {r["metric"]: r["value"] for r in summarise_scores(scores)}
    assert rows == {"relaxed_perplexity": pytest.approx(4.0), "relaxed_cross_entropy": pytest.approx(5.0)}


def _judge_file(tmp_path, model, benchmark, statuses):
    """A judge.parquet as score_judge writes it: a grade row and an _expected row per sample."""
    rows = []
    for i, status in enumerate(statuses):
        grade = {"ok": 4.0, "from_distribution": 2.0}.get(status, float("nan"))
        rows.append({"id": str(i), "metric": "judge_helpfulness", "value": grade, "status": status})
        valued = status in ("ok", "from_distribution")
        rows.append(
            {
                "id": str(i),
                "metric": "judge_helpfulness_expected",
                "value": 3.5 if valued else float("nan"),
                "status": "ok" if valued else ("no_logprobs" if status == "parse_error" else status),
            }
        )
    path = tmp_path / model / benchmark / "judge.parquet"
    path.parent.mkdir(parents=True)
    _scores(rows).with_columns(p1=pl.lit(None, pl.Float64)).write_parquet(path)
    return ScoreFile(model, benchmark, "open", path)


def test_grades_read_from_the_distribution_count_in_the_summary(tmp_path):
    item = _judge_file(tmp_path, "m", "qa", ["ok", "from_distribution", "from_distribution", "empty_output"])
    rows = {r["metric"]: r for r in summarise_scores(pl.read_parquet(item.path))}
    assert rows["judge_helpfulness"] == {"metric": "judge_helpfulness", "value": (4 + 2 + 2) / 3, "n": 3, "n_failed": 1}
    assert rows["judge_helpfulness_expected"]["value"] == 3.5


def test_judge_verdict_shares_per_model_and_benchmark(tmp_path):
    from careval.analysis.aggregate import build_judge_verdicts, write_summary

    files = [
        _judge_file(tmp_path, "m1", "qa", ["ok", "from_distribution", "from_distribution", "empty_output"]),
        _judge_file(tmp_path, "m2", "qa", ["parse_error", "ok", "no_reference"]),
    ]
    rouge = tmp_path / "rouge.parquet"
    _scores([{"id": "0", "metric": "rouge1", "value": 0.5, "status": "ok"}]).write_parquet(rouge)
    files.append(ScoreFile("m1", "qa", "open", rouge))  # not a judge file: no row
    table = build_judge_verdicts(files)
    assert table.select(
        "model", "metric", "n_judged", "n_parsed", "n_from_distribution", "n_parse_error", "n_not_judged"
    ).rows() == [("m1", "judge_helpfulness", 3, 1, 2, 0, 1), ("m2", "judge_helpfulness", 2, 1, 0, 1, 1)]
    assert table["share_parsed"].to_list() == pytest.approx([1 / 3, 1 / 2])
    assert table["share_from_distribution"].to_list() == pytest.approx([2 / 3, 0.0])
    write_summary(files, tmp_path / "summary" / "scores.parquet", judge_output=tmp_path / "summary" / "judge.parquet")
    assert pl.read_parquet(tmp_path / "summary" / "judge.parquet").equals(table)


def test_the_mcqa_average_is_over_its_members_only(tmp_path):
    files = []
    for benchmark, correct in [("bench_a", [1, 1, 0, 0]), ("bench_b", [1] * 9 + [0]), ("bench_es", [0] * 6)]:
        path = tmp_path / f"{benchmark}.parquet"
        _scores(
            [{"id": str(i), "metric": "acc", "value": float(v), "status": "ok"} for i, v in enumerate(correct)]
        ).write_parquet(path)
        files.append(ScoreFile("m", benchmark, "mcqa", path))
    # bench_es is scored and reported but not averaged; a member the run lacks (bench_x) is left out
    summary = build_summary(files, mcqa_average=["bench_a", "bench_b", "bench_x"])
    average = summary.filter((pl.col("benchmark") == MCQA_AVERAGE) & (pl.col("metric") == "acc"))
    assert (average["value"][0], average["n"][0]) == (pytest.approx(11 / 14), 14)
    assert summary.filter(pl.col("benchmark") == "bench_es")["value"].to_list() == [0.0]
    everything = build_summary(files).filter((pl.col("benchmark") == MCQA_AVERAGE) & (pl.col("metric") == "acc"))
    assert everything["value"][0] == pytest.approx(11 / 20)
