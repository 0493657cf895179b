"""Evaluation metrics: n-gram overlap, BERTScore, BLEURT, MoverScore, F1-RadGraph, perplexity, Relaxed Perplexity,
multiple-choice accuracy and the Prometheus judge; careval.metrics.registry knows every metric's direction and range.

Names are imported on first use (PEP 562), so `careval.metrics.registry` -- near the bottom of the import
graph -- costs nothing, and the heavy scorers (torch, transformers, POT) load only when asked for.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "accuracy": "accuracy", "mcqa_predictions": "accuracy", "weighted_average": "accuracy",
    "BleurtScorer": "bleurt",
    "MoverScorer": "moverscore",
    "bleu_corpus": "ngram", "bleu_hf": "ngram", "bleu_sentence": "ngram", "rouge": "ngram",
    "corpus_perplexities": "perplexity", "count_bytes": "perplexity", "count_words": "perplexity",
    "per_sample_perplexities": "perplexity",
    "F1RadGraphScorer": "radgraph",
    "RelaxedPerplexity": "relaxed_perplexity", "relaxed_perplexity": "relaxed_perplexity",
    "score_relaxed_perplexity": "relaxed_perplexity",
    "BertScorer": "semantic", "default_model_path": "semantic",
}
_RENAMED = {"radgraph_metric_name": ("radgraph", "metric_name"), "radgraph_reward_levels": ("radgraph", "reward_levels")}

__all__ = sorted([*_EXPORTS, *_RENAMED])


def __getattr__(name: str):
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name], name
    elif name in _RENAMED:
        module, attribute = _RENAMED[name]
    else:
        raise AttributeError(f"module 'careval.metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"careval.metrics.{module}"), attribute)
    globals()[name] = value
    return value
