"""Evaluation metrics: n-gram overlap, BERTScore, perplexity and multiple-choice accuracy."""

# Only light modules are imported here; BertScorer pulls torch/transformers in on construction.
from careval.metrics.accuracy import accuracy, mcqa_predictions, weighted_average
from careval.metrics.moverscore import MoverScorer
from careval.metrics.ngram import bleu_corpus, bleu_hf, bleu_sentence, rouge
from careval.metrics.perplexity import (
    corpus_perplexities,
    count_bytes,
    count_words,
    per_sample_perplexities,
)
from careval.metrics.semantic import BertScorer, default_model_path

__all__ = [
    "BertScorer",
    "MoverScorer",
    "accuracy",
    "bleu_corpus",
    "bleu_hf",
    "bleu_sentence",
    "corpus_perplexities",
    "count_bytes",
    "count_words",
    "default_model_path",
    "mcqa_predictions",
    "per_sample_perplexities",
    "rouge",
    "weighted_average",
]
