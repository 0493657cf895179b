"""Multiple-choice accuracy from option log-likelihoods (lm-eval acc / acc_norm) and its averaging."""

from __future__ import annotations

import math

import numpy as np

# lm_eval/api/task.py, ConfigurableTask.process_results, output_type == "multiple_choice":
#     choices = self.doc_to_choice(doc)
#     completion_len = np.array([float(len(i)) for i in choices])
#     ...
#     pred = np.argmax(lls)
#     pred_norm = np.argmax(lls / completion_len)
# So acc_norm divides by the number of *characters* (Python str length) of the choice string as
# doc_to_choice returns it -- without the target_delimiter (" ") that is prepended to the
# continuation actually scored -- not by bytes or tokens. np.argmax keeps the first of tied maxima.


def mcqa_predictions(option_logliks: list[list[float]], continuations: list[list[str]]) -> tuple[list[int], list[int]]:
    """(acc predictions, acc_norm predictions): argmax of ll, and of ll / len(choice string).

    `continuations[i]` are question i's choice strings as lm-eval's doc_to_choice gives them
    (no leading delimiter), since their character lengths are the acc_norm normaliser.
    """
    if len(option_logliks) != len(continuations):
        raise ValueError(f"{len(option_logliks)} questions of log-likelihoods but {len(continuations)} of choices")
    preds: list[int] = []
    preds_norm: list[int] = []
    for q, (lls, choices) in enumerate(zip(option_logliks, continuations)):
        if len(lls) != len(choices) or not lls:
            raise ValueError(f"question {q}: {len(lls)} log-likelihoods for {len(choices)} choices")
        lls_arr = np.asarray(lls, dtype=float)
        completion_len = np.array([float(len(c)) for c in choices])
        preds.append(int(np.argmax(lls_arr)))
        # An empty choice string divides by zero exactly as it would in lm-eval; silence the warning.
        with np.errstate(divide="ignore", invalid="ignore"):
            preds_norm.append(int(np.argmax(lls_arr / completion_len)))
    return preds, preds_norm


def accuracy(pred: list[int], gold: list[int]) -> float:
    """Fraction of exact matches (lm-eval's mean of per-question 1.0/0.0); NaN when empty."""
    if len(pred) != len(gold):
        raise ValueError(f"{len(pred)} predictions but {len(gold)} gold labels")
    if not pred:
        return math.nan
    return sum(int(p) == int(g) for p, g in zip(pred, gold)) / len(pred)


def weighted_average(results: list[tuple[float, int]]) -> float:
    """Question-count-weighted mean of per-benchmark scores (the paper's MCQA average).

    `results` holds (score, number of questions) per benchmark; NaN when there are no questions.
    """
    if any(n < 0 for _, n in results):
        raise ValueError("question counts must be non-negative")
    total = sum(n for _, n in results)
    if total == 0:
        return math.nan
    return sum(score * n for score, n in results) / total
