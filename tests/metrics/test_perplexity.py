"""Perplexity formulas checked by hand on known log-likelihoods."""

from __future__ import annotations

import math

import pytest

from careval.metrics import corpus_perplexities, count_bytes, count_words, per_sample_perplexities


def test_single_sample_by_hand():
    # "a b c": 3 words, 5 bytes.
    got = per_sample_perplexities([-10.0], ["a b c"])
    assert got["word_perplexity"] == [pytest.approx(math.exp(10 / 3))]
    assert got["byte_perplexity"] == [pytest.approx(math.exp(2.0))]
    assert got["bits_per_byte"] == [pytest.approx(2.0 / math.log(2))]
    assert corpus_perplexities([-10.0], ["a b c"]) == {k: v[0] for k, v in got.items()}


def test_unicode_counts_utf8_bytes_not_characters():
    # "café" is 4 characters but 5 UTF-8 bytes; "日本" is 2 characters, 6 bytes.
    got = per_sample_perplexities([-5.0, -6.0], ["café", "日本"])
    assert got["byte_perplexity"] == [pytest.approx(math.e), pytest.approx(math.e)]
    assert got["bits_per_byte"] == [pytest.approx(1 / math.log(2))] * 2
    assert got["word_perplexity"] == [pytest.approx(math.exp(5.0)), pytest.approx(math.exp(6.0))]


def test_word_count_follows_lm_eval_regex_split():
    # re.split(r"\s+") keeps empty edge fields: " a  b\n" -> ['', 'a', 'b', ''].
    assert count_words(" a  b\n") == 4
    assert count_words("a\tb\nc") == 3
    assert count_words("") == 1
    assert count_bytes("naïve ") == 7
    got = per_sample_perplexities([-8.0], [" a  b\n"])
    assert got["word_perplexity"] == [pytest.approx(math.exp(2.0))]


def test_corpus_is_weighted_by_counts_not_mean_of_samples():
    lls, texts = [-10.0, -4.0], ["a b c", "dd"]  # words 3 + 1, bytes 5 + 2
    got = corpus_perplexities(lls, texts)
    assert got["word_perplexity"] == pytest.approx(math.exp(14 / 4))
    assert got["byte_perplexity"] == pytest.approx(math.exp(14 / 7))
    assert got["bits_per_byte"] == pytest.approx((14 / 7) / math.log(2))
    per = per_sample_perplexities(lls, texts)
    mean_word = sum(per["word_perplexity"]) / 2
    assert abs(got["word_perplexity"] - mean_word) > 1.0


def test_real_texts_against_independent_counts(load_rows):
    texts = [r["Free_form_answer"] for r in load_rows("medlfqa_kqa_golden", 30)]
    lls = [-0.9 * len(t) - 3.0 for t in texts]

    def words(t):  # whitespace runs + 1, counted by hand
        runs, prev = 0, False
        for ch in t:
            ws = ch.isspace()
            runs += ws and not prev
            prev = ws
        return runs + 1

    def utf8_len(t):
        return sum(1 if ord(c) < 0x80 else 2 if ord(c) < 0x800 else 3 if ord(c) < 0x10000 else 4 for c in t)

    w, b = [words(t) for t in texts], [utf8_len(t) for t in texts]
    per = per_sample_perplexities(lls, texts)
    for i in range(len(texts)):
        assert per["word_perplexity"][i] == pytest.approx(math.exp(-lls[i] / w[i]))
        assert per["bits_per_byte"][i] == pytest.approx(-lls[i] / b[i] / math.log(2))
    corpus = corpus_perplexities(lls, texts)
    assert corpus["byte_perplexity"] == pytest.approx(math.exp(-sum(lls) / sum(b)))
    assert corpus["word_perplexity"] == pytest.approx(math.exp(-sum(lls) / sum(w)))


def test_degenerate_inputs_do_not_crash():
    got = per_sample_perplexities([0.0, -2000.0], ["", "x"])
    assert math.isnan(got["byte_perplexity"][0]) and math.isnan(got["bits_per_byte"][0])
    assert got["word_perplexity"][0] == 1.0  # "" is one lm-eval word, ll 0
    assert got["byte_perplexity"][1] == math.inf  # exp(2000) overflows a float
    assert all(math.isnan(v) for v in corpus_perplexities([], []).values())
    with pytest.raises(ValueError):
        per_sample_perplexities([-1.0], [])
