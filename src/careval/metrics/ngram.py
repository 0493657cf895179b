"""N-gram overlap metrics (ROUGE, BLEU) for open-ended generations against one reference each."""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

import numpy as np

# Settings follow the paper authors' lm-evaluation-harness tasks
# (lm_eval/tasks/{careqa/utils_open.py, meqsum/utils.py, mts_dialog/utils.py, olaph/utils.py}):
# each sample is scored alone with `evaluate.load("rouge")` / `evaluate.load("bleu")` at their
# default arguments and the task reports the mean over samples. `evaluate` needs the Hub to load
# those scripts, so the equivalent computations are done here with rouge_score / sacrebleu.

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def _check_pairs(predictions: list[str], references: list[str]) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")


@lru_cache(maxsize=1)
def _rouge_scorer():
    # Imported here: rouge_score pulls in nltk (~2 s), which `import careval.metrics` must not pay.
    from rouge_score import rouge_scorer

    # evaluate's rouge metric builds RougeScorer(rouge_types, use_stemmer=False, tokenizer=None)
    # (huggingface/evaluate metrics/rouge/rouge.py, defaults kept by the authors' tasks), so no
    # stemming and rouge_score's default lower-casing alphanumeric tokenizer. rougeLsum is in
    # evaluate's default list but the tasks never report it; ROUGE types are scored independently,
    # so leaving it out changes nothing.
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=False)


def rouge(predictions: list[str], references: list[str]) -> dict[str, list[float]]:
    """Per-sample ROUGE-1/2/L F-measure, as the authors' tasks get from evaluate's rouge per doc.

    With a single sample, evaluate's BootstrapAggregator mid F-measure is that sample's F-measure,
    so the per-doc value is exactly `RougeScorer.score(reference, prediction).fmeasure`.
    Empty strings score 0.0.
    """
    _check_pairs(predictions, references)
    scorer = _rouge_scorer()
    out: dict[str, list[float]] = {k: [] for k in ROUGE_TYPES}
    for pred, ref in zip(predictions, references):
        # rouge_score's signature is score(target, prediction); evaluate passes (ref, pred).
        scores = scorer.score(ref, pred)
        for k in ROUGE_TYPES:
            out[k].append(float(scores[k].fmeasure))
    return out


def bleu_sentence(predictions: list[str], references: list[str]) -> list[float]:
    """Per-sample sacreBLEU (0-100) with sacrebleu's sentence defaults (13a, exp smoothing)."""
    _check_pairs(predictions, references)
    import sacrebleu

    return [float(sacrebleu.sentence_bleu(p, [r]).score) for p, r in zip(predictions, references)]


def bleu_corpus(predictions: list[str], references: list[str]) -> float:
    """Corpus sacreBLEU (0-100); this is lm-eval's own `bleu` aggregation (lm_eval/api/metrics.py).

    Returns NaN for an empty corpus, where sacrebleu itself raises.
    """
    _check_pairs(predictions, references)
    if not predictions:
        return math.nan
    import sacrebleu

    # lm-eval's _sacreformat turns one reference per prediction into a single reference stream.
    return float(sacrebleu.corpus_bleu(list(predictions), [list(references)]).score)


def _ngram_counts(tokens: list[str], max_order: int) -> Counter:
    counts: Counter = Counter()
    for order in range(1, max_order + 1):
        for i in range(len(tokens) - order + 1):
            counts[tuple(tokens[i : i + order])] += 1
    return counts


def _nmt_bleu(pred_tokens: list[str], ref_tokens: list[str], max_order: int = 4) -> float:
    # Port of compute_bleu from huggingface/evaluate metrics/bleu/nmt_bleu.py (tensorflow/nmt),
    # reduced to one segment and one reference, smooth=False as the tasks leave it.
    overlap = _ngram_counts(pred_tokens, max_order) & _ngram_counts(ref_tokens, max_order)
    matches = [0] * max_order
    for ngram, n in overlap.items():
        matches[len(ngram) - 1] += n
    precisions = []
    for order in range(1, max_order + 1):
        possible = len(pred_tokens) - order + 1
        precisions.append(matches[order - 1] / possible if possible > 0 else 0.0)
    if min(precisions) <= 0:
        return 0.0
    geo_mean = math.exp(sum(math.log(p) for p in precisions) / max_order)
    if not pred_tokens or not ref_tokens:
        return 0.0
    ratio = len(pred_tokens) / len(ref_tokens)
    bp = 1.0 if ratio > 1.0 else math.exp(1 - 1.0 / ratio)
    return geo_mean * bp


def bleu_hf(predictions: list[str], references: list[str]) -> list[float]:
    """Per-sample BLEU (0-1) exactly as `evaluate.load("bleu")` gives it in the authors' tasks.

    That metric is the tensorflow/nmt BLEU, not sacreBLEU: 13a tokens, max order 4, no smoothing,
    so any sample without a matching 4-gram scores 0. The paper's BLEU columns are the mean of
    these values. (The tasks add 1e-5 to an exact 0 only to keep their bootstrap stderr defined;
    that is not reproduced.)
    """
    _check_pairs(predictions, references)
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    # evaluate's tokenizer_13a.py is a copy of sacrebleu's 13a that returns line.split().
    tok = Tokenizer13a()
    return [_nmt_bleu(tok(p).split(), tok(r).split()) for p, r in zip(predictions, references)]


# sacreBLEU's per-segment sufficient statistics: hypothesis length, reference length, matches of orders 1-4, n-grams of
# orders 1-4 (sacrebleu's own layout); the corpus value is a function of their sums.
BLEU_STATISTICS = 10


def bleu_corpus_statistics(predictions: list[str], references: list[str]) -> np.ndarray:
    """(n, 10) per-pair statistics of corpus sacreBLEU (the defaults of bleu_corpus), for resampling the corpus."""
    _check_pairs(predictions, references)
    if not predictions:
        return np.zeros((0, BLEU_STATISTICS))
    from sacrebleu.metrics.bleu import BLEU

    # sacrebleu's API for re-computing corpus scores from segment statistics ("esp. during statistical tests")
    return np.asarray(BLEU()._extract_corpus_statistics(list(predictions), [list(references)]), float)


def bleu_from_statistics(sums: np.ndarray) -> np.ndarray:
    """Corpus sacreBLEU (0-100) of summed statistics (..., 10), vectorised: sacrebleu's BLEU.compute_bleu with its
    corpus defaults (exp smoothing, order 4, no effective order)."""
    sys_len, ref_len = sums[..., 0], sums[..., 1]
    correct, total = sums[..., 2:6], sums[..., 6:10]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
        alive = np.cumprod(total > 0, axis=-1).astype(bool)  # orders before the first without any n-gram
        smooth = 2.0 ** np.cumsum((correct == 0) & alive, axis=-1)
        precision = np.where(alive, np.where(correct == 0, 100.0 / (smooth * total), 100.0 * correct / total), 0.0)
        log_precision = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), -9999999999.0)
        score = bp * np.exp(log_precision.sum(-1) / 4)
    return np.where(correct.sum(-1) == 0, 0.0, score)  # sacrebleu stops early without any match
