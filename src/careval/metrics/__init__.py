"""Evaluation metrics: n-gram overlap, BERTScore, BLEURT, F1-RadGraph, perplexity, multiple-choice accuracy and the Prometheus judge;
careval.metrics.registry knows every metric's family, direction and range."""

# careval.metrics.judge (the Prometheus judge) is imported by its users: it pulls prometheus-eval and the
# backends in. Metrics never import careval.scoring (the layer above them); their row layout is careval.schemas.

# Only light modules are imported here; BertScorer pulls torch/transformers in on construction.
from careval.metrics.accuracy import accuracy, mcqa_predictions, weighted_average
from careval.metrics.bleurt import BleurtScorer
from careval.metrics.moverscore import MoverScorer
from careval.metrics.ngram import bleu_corpus, bleu_hf, bleu_sentence, rouge
from careval.metrics.perplexity import (
    corpus_perplexities,
    count_bytes,
    count_words,
    per_sample_perplexities,
)
from careval.metrics.radgraph import (
    F1RadGraphScorer,
    metric_name as radgraph_metric_name,
    reward_levels as radgraph_reward_levels,
)
from careval.metrics.relaxed_perplexity import RelaxedPerplexity, relaxed_perplexity
from careval.metrics.semantic import BertScorer, default_model_path

__all__ = [
    "BertScorer",
    "BleurtScorer",
    "F1RadGraphScorer",
    "MoverScorer",
    "RelaxedPerplexity",
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
    "radgraph_metric_name",
    "radgraph_reward_levels",
    "relaxed_perplexity",
    "rouge",
    "weighted_average",
]
