"""BertScorer checked against bert_score.score on real benchmark text."""

from __future__ import annotations

import random

import bert_score
import numpy as np
import pytest

from careval.metrics import BertScorer, default_model_path

KEYS = ("bertscore_precision", "bertscore_recall", "bertscore_f1")


@pytest.fixture(scope="module")
def scorer() -> BertScorer:
    return BertScorer()


@pytest.fixture(scope="module")
def pairs(meqsum_pairs, lfqa_pairs) -> tuple[list[str], list[str]]:
    return meqsum_pairs[0][:12] + lfqa_pairs[0][:3], meqsum_pairs[1][:12] + lfqa_pairs[1][:3]


@pytest.fixture(scope="module")
def scored(scorer, pairs) -> dict[str, list[float]]:
    return scorer.score(*pairs)


def _reference(preds, refs, **kw):
    p, r, f = bert_score.score(preds, refs, model_type=default_model_path(), num_layers=6, **kw)
    return {"bertscore_precision": p.numpy(), "bertscore_recall": r.numpy(), "bertscore_f1": f.numpy()}


def test_matches_bert_score_score(scored, pairs):
    preds, refs = pairs
    got = scored
    want = _reference(preds, refs)
    for k in KEYS:
        assert len(got[k]) == len(preds)
        np.testing.assert_allclose(got[k], want[k], atol=1e-5, rtol=0)
    # Related but different texts: scores strictly inside (0, 1).
    assert min(got["bertscore_f1"]) > 0.2 and max(got["bertscore_f1"]) < 0.99


@pytest.mark.slow  # ~15 s: a second scorer, with IDF; test_matches_bert_score_score stays in the quick loop
def test_idf_matches_bert_score_score(pairs):
    preds, refs = pairs
    got = BertScorer(idf=True).score(preds, refs)
    want = _reference(preds, refs, idf=True)
    for k in KEYS:
        np.testing.assert_allclose(got[k], want[k], atol=1e-5, rtol=0)


def test_identical_sentences_score_one(scorer, pairs):
    texts = pairs[1]
    got = scorer.score(texts, texts)
    for k in KEYS:
        np.testing.assert_allclose(got[k], 1.0, atol=1e-5)


@pytest.mark.slow  # ~10 s: rescoring every pair twice
def test_deterministic_and_independent_of_pair_order(scorer, pairs, scored):
    preds, refs = pairs
    first = scored
    assert scorer.score(preds, refs) == first
    order = list(range(len(preds)))
    random.Random(0).shuffle(order)
    shuffled = scorer.score([preds[i] for i in order], [refs[i] for i in order])
    for k in KEYS:
        assert [shuffled[k][order.index(i)] for i in range(len(preds))] == first[k]


def test_blank_texts_score_zero_without_crashing(scorer, pairs):
    preds, refs = pairs
    got = scorer.score(["", preds[0], "  \n", preds[1]], [refs[0], "", refs[2], refs[1]])
    for k in KEYS:
        assert got[k][:3] == [0.0, 0.0, 0.0]
        assert got[k][3] == pytest.approx(_reference([preds[1]], [refs[1]])[k][0], abs=1e-5)
    assert scorer.score(["", " "], ["x", "y"])["bertscore_f1"] == [0.0, 0.0]
    assert scorer.score([], []) == {k: [] for k in KEYS}


def test_model_is_not_reloaded_per_call(scorer, pairs, monkeypatch):
    import bert_score.utils
    import transformers

    def _boom(*a, **k):
        raise AssertionError("model reloaded inside score()")

    monkeypatch.setattr(bert_score.utils, "get_model", _boom)
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", _boom)
    assert len(scorer.score(pairs[0][:2], pairs[1][:2])["bertscore_f1"]) == 2


def test_length_mismatch_is_an_error(scorer):
    with pytest.raises(ValueError):
        scorer.score(["a"], ["a", "b"])


class _Built(Exception):
    """Raised instead of loading the model: the settings are recorded, roberta-large never loads."""


def _recording(calls: dict):
    def get_tokenizer(model_type, use_fast=False):
        calls["tokenizer"] = (model_type, use_fast)
        return object()

    def get_model(model_type, num_layers, all_layers=None):
        calls["model"] = (model_type, num_layers, bool(all_layers))
        raise _Built

    return get_tokenizer, get_model


def test_paper_config_builds_the_scorer_bert_score_builds_for_lang_en(repo_root, monkeypatch):
    """config/paper.yaml's BERTScore is the authors' `bertscore.compute(..., lang="en")`: what
    bert_score.score(lang="en") would load (model, layer, tokenizer, idf), without loading it."""
    import inspect
    import sys

    import yaml

    from careval.config import prepare_config
    from careval.scoring import bertscore_kwargs

    theirs: dict = {}
    score_module = sys.modules["bert_score.score"]
    tok, model = _recording(theirs)
    monkeypatch.setattr(score_module, "get_tokenizer", tok)
    monkeypatch.setattr(score_module, "get_model", model)
    with pytest.raises(_Built):
        bert_score.score(["a"], ["b"], lang="en")

    options = prepare_config(yaml.safe_load((repo_root / "config" / "paper.yaml").read_text()))["metrics"]["bertscore"]
    kwargs = bertscore_kwargs(options)
    ours: dict = {}
    tok, model = _recording(ours)
    monkeypatch.setattr(bert_score.utils, "get_tokenizer", tok)
    monkeypatch.setattr(bert_score.utils, "get_model", model)
    with pytest.raises(_Built):
        BertScorer(**kwargs)

    assert ours == theirs
    assert theirs["model"] == ("roberta-large", 17, False)  # bert_score's own table, read through its code
    idf_default = inspect.signature(bert_score.score).parameters["idf"].default
    assert kwargs.get("idf", inspect.signature(BertScorer).parameters["idf"].default) is idf_default is False


def test_a_hub_model_gets_bert_scores_tuned_layer_and_the_packaged_encoder_keeps_six():
    from bert_score.utils import model2layers

    from careval.scoring import bertscore_kwargs

    assert (
        bertscore_kwargs({"model": "distilbert-base-uncased"})["num_layers"]
        == model2layers["distilbert-base-uncased"]
        == 5
    )
    assert bertscore_kwargs({"model": "distilbert-base-uncased", "num_layers": 6})["num_layers"] == 6
    assert bertscore_kwargs({"lang": "en", "model": "bert-base-uncased"})["model_path"] == "bert-base-uncased"
    assert bertscore_kwargs({}) == {"model_path": None}  # BertScorer's default: MiniLM at its 6th layer
