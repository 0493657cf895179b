"""ROUGE and BLEU checked against rouge_score / sacrebleu and against hand computations."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from careval.metrics import bleu_corpus, bleu_hf, bleu_sentence, rouge


# --- independent ROUGE: rouge_score's default tokenisation, re-implemented by hand -------------
def _tokens(text: str) -> list[str]:
    return [t for t in re.sub(r"[^a-z0-9]+", " ", text.lower()).split() if t]


def _f(overlap: int, n_pred: int, n_ref: int) -> float:
    if overlap == 0:
        return 0.0
    p, r = overlap / n_pred, overlap / n_ref
    return 2 * p * r / (p + r)


def _ngram_f(pred: str, ref: str, n: int) -> float:
    def grams(toks):
        return Counter(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))

    gp, gr = grams(_tokens(pred)), grams(_tokens(ref))
    return _f(sum((gp & gr).values()), sum(gp.values()), sum(gr.values()))


def _lcs_f(pred: str, ref: str) -> float:
    a, b = _tokens(pred), _tokens(ref)
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return _f(table[-1][-1], len(a), len(b))


def test_rouge_matches_rouge_score_on_real_pairs(meqsum_pairs, lfqa_pairs):
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    for preds, refs in (meqsum_pairs, lfqa_pairs):
        got = rouge(preds, refs)
        assert set(got) == {"rouge1", "rouge2", "rougeL"}
        for i, (p, r) in enumerate(zip(preds, refs)):
            want = scorer.score(r, p)
            for k in got:
                assert got[k][i] == pytest.approx(want[k].fmeasure, abs=1e-12)
        # The pairs are related but not copies, so the check is not vacuous.
        assert 0 < sum(got["rouge1"]) / len(preds) < 1


def test_rouge_matches_hand_written_overlap_and_lcs(meqsum_pairs, lfqa_pairs):
    preds = meqsum_pairs[0][:10] + lfqa_pairs[0][:3]
    refs = meqsum_pairs[1][:10] + lfqa_pairs[1][:3]
    got = rouge(preds, refs)
    for i, (p, r) in enumerate(zip(preds, refs)):
        assert got["rouge1"][i] == pytest.approx(_ngram_f(p, r, 1), abs=1e-12)
        assert got["rouge2"][i] == pytest.approx(_ngram_f(p, r, 2), abs=1e-12)
        assert got["rougeL"][i] == pytest.approx(_lcs_f(p, r), abs=1e-12)
    assert any(v > 0 for v in got["rouge2"])


def test_rouge_known_values():
    got = rouge(["The cat sat on the mat."], ["the cat is on the mat"])
    assert got["rouge1"][0] == pytest.approx(5 / 6)
    assert got["rouge2"][0] == pytest.approx(3 / 5)  # the-cat, on-the, the-mat of 5 bigrams each
    assert got["rougeL"][0] == pytest.approx(5 / 6)  # LCS "the cat on the mat"


def test_rouge_does_not_stem_like_the_authors_tasks():
    # evaluate's rouge defaults to use_stemmer=False; with stemming these would match.
    got = rouge(["patients running tests"], ["patient runs test"])
    assert got["rouge1"] == [0.0]


def test_rouge_empty_strings_score_zero():
    got = rouge(["", "headache", "   "], ["a reference", "", "x"])
    assert got == {"rouge1": [0.0] * 3, "rouge2": [0.0] * 3, "rougeL": [0.0] * 3}


def test_sentence_bleu_matches_sacrebleu(meqsum_pairs, lfqa_pairs):
    for preds, refs in (meqsum_pairs, lfqa_pairs):
        got = bleu_sentence(preds, refs)
        want = [sacrebleu.sentence_bleu(p, [r]).score for p, r in zip(preds, refs)]
        assert got == pytest.approx(want, abs=1e-12)
        assert any(v > 1 for v in got)


def test_corpus_bleu_matches_sacrebleu_and_is_not_mean_of_sentences(lfqa_pairs):
    preds, refs = lfqa_pairs
    got = bleu_corpus(preds, refs)
    assert got == pytest.approx(sacrebleu.corpus_bleu(preds, [refs]).score, abs=1e-12)
    mean_sentence = sum(bleu_sentence(preds, refs)) / len(preds)
    assert abs(got - mean_sentence) > 0.1


def test_bleu_hf_hand_values():
    # 7 vs 6 tokens: precisions 6/7, 5/6, 4/5, 3/4, no brevity penalty.
    long_pred = bleu_hf(["the cat sat on the mat today"], ["the cat sat on the mat"])[0]
    assert long_pred == pytest.approx((6 / 7 * 5 / 6 * 4 / 5 * 3 / 4) ** 0.25)
    # All precisions 1, ratio 4/6: BP = exp(1 - 6/4).
    short_pred = bleu_hf(["the cat sat on"], ["the cat sat on the mat"])[0]
    assert short_pred == pytest.approx(math.exp(1 - 6 / 4))
    # 13a splits punctuation: "mat." -> "mat ." matches the reference tokens exactly.
    assert bleu_hf(["The cat sat on the mat."], ["The cat sat on the mat ."]) == [pytest.approx(1.0)]


def test_bleu_hf_is_unsmoothed_nmt_bleu(meqsum_pairs, lfqa_pairs):
    preds = meqsum_pairs[0] + lfqa_pairs[0]
    refs = meqsum_pairs[1] + lfqa_pairs[1]
    got = bleu_hf(preds, refs)
    # With one segment and one reference, unsmoothed sacreBLEU is the same formula (scale 0-100).
    want = [sacrebleu.corpus_bleu([p], [[r]], smooth_method="none").score / 100 for p, r in zip(preds, refs)]
    assert got == pytest.approx(want, abs=1e-9)
    # No 4-gram in common: the authors' BLEU is 0 while smoothed sentence BLEU is not.
    zero = [i for i, v in enumerate(got) if v == 0.0]
    assert zero and any(bleu_sentence([preds[i]], [refs[i]])[0] > 0 for i in zero)


def test_bleu_empty_strings_do_not_crash():
    assert bleu_sentence(["", "x"], ["ref text", ""]) == [0.0, 0.0]
    assert bleu_hf(["", "x", ""], ["ref text", "", ""]) == [0.0, 0.0, 0.0]
    assert bleu_corpus(["", ""], ["a b", "c"]) == 0.0
    assert math.isnan(bleu_corpus([], []))


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError):
        rouge(["a"], [])
    with pytest.raises(ValueError):
        bleu_sentence(["a", "b"], ["a"])
    with pytest.raises(ValueError):
        bleu_hf(["a"], ["a", "b"])


def test_bleu_hf_equals_nltk_unsmoothed_bleu_with_brevity_penalty(meqsum_pairs, lfqa_pairs, load_rows):
    """The authors' `bleu` (evaluate's BLEU per sample) against an independent implementation with the
    same settings: nltk's corpus_bleu on the 13a tokens, uniform 4-gram weights, no smoothing, its
    brevity penalty. nltk gives an unmatched order the smallest float instead of 0 (and warns)."""
    import warnings

    from nltk.translate.bleu_score import corpus_bleu
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    mts = load_rows("mts_dialog", 30)
    # MTS-Dialog note sections against the dialogue's doctor turns: long texts, partial overlap
    doctor = [" ".join(t[len("Doctor:") :] for t in r["dialogue"].split("\n") if t.startswith("Doctor:")) for r in mts]
    preds = meqsum_pairs[0] + lfqa_pairs[0] + doctor + [r["section_text"] for r in mts[:5]]
    refs = meqsum_pairs[1] + lfqa_pairs[1] + [r["section_text"] for r in mts] + [r["section_text"] for r in mts[:5]]
    tok = Tokenizer13a()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk's "the hypothesis contains 0 counts of n-gram overlaps"
        want = [corpus_bleu([[tok(r).split()]], [tok(p).split()]) for p, r in zip(preds, refs)]
    got = bleu_hf(preds, refs)
    assert got == pytest.approx(want, abs=1e-9)
    assert sum(v > 0 for v in got) >= 10 and sum(v == 0 for v in got) >= 5 and max(got) == pytest.approx(1.0)
