"""Metric families over per-sample rows: statuses are counted, corpus values carried, values match the metric library."""

import math

import polars as pl
import pytest
from rouge_score import rouge_scorer

from careval.schemas import DATASET_SCHEMA
from careval.scoring import score_perplexity, score_text
from careval.tasks.open import generation_rows, loglik_requests


def _samples(references):
    return pl.DataFrame(
        [
            {
                "id": f"s{i}",
                "benchmark": "b",
                "task": "open",
                "question": f"Question {i}?",
                "context": None,
                "options": None,
                "answer": None,
                "reference": ref,
                "meta": "{}",
            }
            for i, ref in enumerate(references)
        ],
        schema=DATASET_SCHEMA,
    )


def test_empty_output_is_nan_with_status_and_others_match_rouge_score():
    refs = [
        "Metformin is the first-line drug for type 2 diabetes.",
        "Aspirin irreversibly inhibits COX-1.",
        "Rest, ice and elevation.",
    ]
    outputs = ["Metformin is first line in type 2 diabetes.", "   ", "Ice and rest help."]
    samples = _samples(refs)
    generations = generation_rows(samples, ["p"] * 3, outputs)
    assert generations["status"].to_list() == ["ok", "empty_output", "ok"]
    scores = score_text("rouge", samples, generations)
    rouge1 = scores.filter(pl.col("metric") == "rouge1")
    scorer = rouge_scorer.RougeScorer(["rouge1"])
    assert rouge1["value"][0] == pytest.approx(scorer.score(refs[0], outputs[0])["rouge1"].fmeasure)
    assert rouge1["value"][2] == pytest.approx(scorer.score(refs[2], outputs[2])["rouge1"].fmeasure)
    assert math.isnan(rouge1["value"][1]) and rouge1["status"][1] == "empty_output"


def test_bleu_family_carries_the_corpus_value():
    import sacrebleu

    refs = ["The patient has community acquired pneumonia.", "Start amoxicillin for five days."]
    outputs = ["The patient has pneumonia.", "Start amoxicillin for seven days."]
    samples = _samples(refs)
    scores = score_text("bleu", samples, generation_rows(samples, ["p"] * 2, outputs))
    corpus = scores.filter(pl.col("level") == "corpus")
    assert corpus["metric"].to_list() == ["sacrebleu_corpus"]
    assert corpus["value"][0] == pytest.approx(sacrebleu.corpus_bleu(outputs, [refs]).score)


def test_perplexity_rows_from_logliks_by_hand():
    refs = ["a b c", "dé f"]  # 3 words / 5 bytes, 2 words / 5 bytes (é is two bytes)
    samples = _samples(refs)
    requests = loglik_requests(samples, "{question}")
    assert requests["kind"].to_list() == ["reference", "reference_given_question"] * 2
    logliks = requests.with_columns(pl.Series("loglik", [-6.0, -3.0, -4.0, float("nan")]))
    scores = score_perplexity(samples, logliks)
    corpus = {r["metric"]: r["value"] for r in scores.filter(pl.col("level") == "corpus").iter_rows(named=True)}
    assert corpus["word_perplexity"] == pytest.approx(math.exp(10 / 5))
    assert corpus["bits_per_byte"] == pytest.approx(10 / 10 / math.log(2))
    # the conditional variant lost one sample to a non-finite log-likelihood: counted, and left out
    assert corpus["word_perplexity_given_question"] == pytest.approx(math.exp(3 / 3))
    bad = scores.filter((pl.col("id") == "s1") & pl.col("metric").str.ends_with("_given_question"))
    assert set(bad["status"]) == {"invalid_loglik"}


def test_moverscore_family_matches_the_scorer_and_counts_undefined_pairs():
    from careval.metrics import MoverScorer

    refs = [
        "Metformin is the first-line drug for type 2 diabetes.",
        "Aspirin irreversibly inhibits COX-1.",
        "Rest, ice and elevation.",
        "Drink fluids.",
    ]
    # "?!" keeps no word piece after v2's punctuation filter: the pair has no defined score.
    outputs = ["Metformin is first line in type 2 diabetes.", "Aspirin blocks COX-1 for good.", "?!", ""]
    samples = _samples(refs)
    generations = generation_rows(samples, ["p"] * 4, outputs)
    scores = score_text("moverscore", samples, generations, {"batch_size": 4})
    direct = MoverScorer(batch_size=4).score(outputs[:3], refs[:3])["moverscore"]
    assert scores["value"][:2].to_list() == pytest.approx(direct[:2], abs=1e-12)
    assert scores["status"].to_list() == ["ok", "ok", "undefined", "empty_output"]
    assert math.isnan(direct[2]) and scores["value"][2:].is_nan().all()


def test_moverscore_single_pair_is_undefined_not_perfect():
    from careval.metrics import MoverScorer

    # With one pair every word piece has df = M = 1, so IDF weight 0 on both sides (v2 says 1.0).
    assert math.isnan(MoverScorer().score(["Take ibuprofen."], ["Use paracetamol."])["moverscore"][0])


def test_bleu_family_writes_the_authors_bleu_and_sacrebleu_under_its_name():
    import sacrebleu

    from careval.metrics import bleu_hf
    from careval.metrics.registry import metric_spec

    refs = ["The patient has community acquired pneumonia and a fever.", "Start amoxicillin for five days."]
    outputs = ["The patient has community acquired pneumonia.", "Start amoxicillin for seven days."]
    samples = _samples(refs)
    scores = score_text("bleu", samples, generation_rows(samples, ["p"] * 2, outputs)).filter(
        pl.col("level") == "sample"
    )
    by_metric = {m: scores.filter(pl.col("metric") == m)["value"].to_list() for m in ("bleu", "sacrebleu")}
    assert by_metric["bleu"] == pytest.approx(bleu_hf(outputs, refs))
    assert by_metric["sacrebleu"] == pytest.approx(
        [sacrebleu.sentence_bleu(o, [r]).score for o, r in zip(outputs, refs)]
    )
    assert 0 < by_metric["bleu"][0] < 1 and by_metric["bleu"][1] == 0.0  # no 4-gram in common: unsmoothed 0
    assert metric_spec("bleu").bounds == (0.0, 1.0) and metric_spec("sacrebleu").bounds == (0.0, 100.0)
