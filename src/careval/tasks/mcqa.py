"""Multiple-choice QA: score each option by log-likelihood, predict the most likely one (acc and acc_norm)."""
from __future__ import annotations

import math

import polars as pl

from careval.metrics.accuracy import mcqa_predictions
from careval.tasks.prompts import fill_prompt


def option_continuation(option: str) -> str:
    # A leading space, as lm-eval's default target delimiter, so the option is tokenised as running text.
    return " " + option


def loglik_requests(samples: pl.DataFrame, template: str) -> pl.DataFrame:
    """One (context, continuation) request per sample and option."""
    rows = []
    for sample in samples.iter_rows(named=True):
        context = fill_prompt(template, sample)
        for index, option in enumerate(sample["options"]):
            rows.append({"id": sample["id"], "kind": "option", "option": index,
                         "context": context, "continuation": option_continuation(option)})
    return pl.DataFrame(rows, schema={"id": pl.String, "kind": pl.String, "option": pl.Int64,
                                      "context": pl.String, "continuation": pl.String})


def score_mcqa(samples: pl.DataFrame, logliks: pl.DataFrame) -> pl.DataFrame:
    """Per-sample acc / acc_norm rows; a sample whose option log-likelihoods are not finite is counted, not scored."""
    by_id = {key[0]: group.sort("option") for key, group in logliks.filter(pl.col("kind") == "option").group_by("id")}
    rows = []
    for sample in samples.iter_rows(named=True):
        group = by_id.get(sample["id"])
        if group is None or group.height != len(sample["options"]) or not all(math.isfinite(v) for v in group["loglik"]):
            for metric in ("acc", "acc_norm"):
                rows.append({"id": sample["id"], "metric": metric, "value": float("nan"), "status": "invalid_loglik"})
            continue
        # acc_norm divides by the option's own length, without the delimiter (lm-eval's doc_to_choice).
        pred, pred_norm = mcqa_predictions([group["loglik"].to_list()], [sample["options"]])
        rows.append({"id": sample["id"], "metric": "acc", "value": float(pred[0] == sample["answer"]), "status": "ok"})
        rows.append({"id": sample["id"], "metric": "acc_norm", "value": float(pred_norm[0] == sample["answer"]), "status": "ok"})
    return pl.DataFrame(rows, schema={"id": pl.String, "metric": pl.String, "value": pl.Float64, "status": pl.String})
