"""MCQA requests and acc / acc_norm from option log-likelihoods, by hand."""

import math

import polars as pl

from careval.schemas import DATASET_SCHEMA
from careval.tasks.mcqa import loglik_requests, score_mcqa


def _samples():
    return pl.DataFrame(
        [
            {
                "id": "q1",
                "benchmark": "b",
                "task": "mcqa",
                "question": "Which organ secretes insulin?",
                "context": None,
                "options": ["Liver", "Pancreas", "Spleen"],
                "answer": 1,
                "reference": None,
                "meta": "{}",
            },
            {
                "id": "q2",
                "benchmark": "b",
                "task": "mcqa",
                "question": "First-line drug for anaphylaxis?",
                "context": None,
                "options": ["Adrenaline", "An oral antihistamine"],
                "answer": 0,
                "reference": None,
                "meta": "{}",
            },
        ],
        schema=DATASET_SCHEMA,
    )


def test_one_request_per_option_with_the_prompt_as_context():
    requests = loglik_requests(_samples(), "Q: {question}\nA:")
    assert requests.height == 5
    assert requests["context"][0] == "Q: Which organ secretes insulin?\nA:"
    assert requests["continuation"].to_list()[:3] == [" Liver", " Pancreas", " Spleen"]


def test_acc_and_acc_norm_by_hand():
    requests = loglik_requests(_samples(), "Q: {question}\nA:")
    # q1: raw argmax is "Liver" (-5); per character: Liver -5/5=-1.0, Pancreas -6/8=-0.75, Spleen -9/6=-1.5
    #     -> acc wrong, acc_norm right.
    # q2: Adrenaline -8/10=-0.8 vs antihistamine -12/21=-0.571: acc right, acc_norm wrong.
    logliks = requests.with_columns(pl.Series("loglik", [-5.0, -6.0, -9.0, -8.0, -12.0]))
    scores = score_mcqa(_samples(), logliks)
    got = {(r["id"], r["metric"]): r["value"] for r in scores.iter_rows(named=True)}
    assert got == {("q1", "acc"): 0.0, ("q1", "acc_norm"): 1.0, ("q2", "acc"): 1.0, ("q2", "acc_norm"): 0.0}
    assert set(scores["status"]) == {"ok"}


def test_non_finite_loglik_is_a_counted_status_not_a_wrong_answer():
    requests = loglik_requests(_samples(), "{question}")
    logliks = requests.with_columns(pl.Series("loglik", [-1.0, float("nan"), -2.0, -1.0, -3.0]))
    scores = score_mcqa(_samples(), logliks)
    q1 = scores.filter(pl.col("id") == "q1")
    assert set(q1["status"]) == {"invalid_loglik"} and all(math.isnan(v) for v in q1["value"])
    assert set(scores.filter(pl.col("id") == "q2")["status"]) == {"ok"}


def test_letters_style_scores_the_letters_after_one_shared_context():
    requests = loglik_requests(_samples(), "Q: {question}\n{options}\nA:", style="letters")
    assert requests["continuation"].to_list() == [" A", " B", " C", " A", " B"]
    q1 = requests.filter(pl.col("id") == "q1")
    # one context per question, shared by its choices (one forward pass), in consecutive rows
    assert q1["context"].unique().to_list() == [
        "Q: Which organ secretes insulin?\nA. Liver\nB. Pancreas\nC. Spleen\nA:"
    ]
    assert requests["id"].to_list() == ["q1", "q1", "q1", "q2", "q2"]


def test_letters_acc_norm_divides_by_the_letter_so_it_is_acc():
    # the cloze logliks of test_acc_and_acc_norm_by_hand: by letter (length 1 each) acc_norm follows acc
    requests = loglik_requests(_samples(), "Q: {question}\n{options}\nA:", style="letters")
    logliks = requests.with_columns(pl.Series("loglik", [-5.0, -6.0, -9.0, -8.0, -12.0]))
    got = {(r["id"], r["metric"]): r["value"] for r in score_mcqa(_samples(), logliks).iter_rows(named=True)}
    assert got == {("q1", "acc"): 0.0, ("q1", "acc_norm"): 0.0, ("q2", "acc"): 1.0, ("q2", "acc_norm"): 1.0}
