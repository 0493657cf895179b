"""Multiple-choice QA: score each choice by log-likelihood, predict the most likely one (acc and acc_norm).

Two styles (Benchmark.mcqa_style), as lm-eval's multiple_choice tasks: "cloze" scores each option's
text after the prompt; "letters" lists the options as "A. ..." in the prompt ({options}) and scores
the letters " A", " B", ... Either way every choice of a question is scored after the one identical
context string, in consecutive rows, so a backend can score a question's choices in one forward pass.
"""

from __future__ import annotations

import math
import string

import polars as pl

# lm-eval's default target_delimiter, between context and choice (a backend drops it under a chat template)
from careval.backends.chat import TARGET_DELIMITER
from careval.metrics.accuracy import mcqa_predictions
from careval.schemas import LOGLIK_REQUEST_SCHEMA
from careval.tasks.prompts import fill_prompt


def option_continuation(option: str) -> str:
    return TARGET_DELIMITER + option


def choice_strings(options: list[str], style: str, sample_id: str = "") -> list[str]:
    """What is scored for each option (lm-eval's doc_to_choice): the option text, or its letter."""
    if style == "cloze":
        return list(options)
    if style == "letters":
        if len(options) > len(string.ascii_uppercase):
            raise ValueError(f"sample {sample_id}: {len(options)} options, but the letters style has 26 letters")
        return list(string.ascii_uppercase[: len(options)])
    raise ValueError(f"unknown MCQA style '{style}' (letters, cloze)")


def loglik_requests(samples: pl.DataFrame, template: str, style: str = "cloze") -> pl.DataFrame:
    """One (context, continuation) request per sample and option; a sample's requests share its context."""
    rows = []
    for sample in samples.iter_rows(named=True):
        context = fill_prompt(template, sample)
        for index, choice in enumerate(choice_strings(sample["options"], style, sample["id"])):
            rows.append(
                {
                    "id": sample["id"],
                    "kind": "option",
                    "option": index,
                    "context": context,
                    "continuation": option_continuation(choice),
                }
            )
    return pl.DataFrame(rows, schema=LOGLIK_REQUEST_SCHEMA)


def score_mcqa(samples: pl.DataFrame, logliks: pl.DataFrame) -> pl.DataFrame:
    """Per-sample acc / acc_norm rows; a sample whose option log-likelihoods are not finite is counted, not scored."""
    by_id = {key[0]: group.sort("option") for key, group in logliks.filter(pl.col("kind") == "option").group_by("id")}
    rows = []
    for sample in samples.iter_rows(named=True):
        group = by_id.get(sample["id"])
        if (
            group is None
            or group.height != len(sample["options"])
            or not all(math.isfinite(v) for v in group["loglik"])
        ):
            for metric in ("acc", "acc_norm"):
                rows.append({"id": sample["id"], "metric": metric, "value": float("nan"), "status": "invalid_loglik"})
            continue
        # acc_norm divides by the length of the choice string scored (the option text, or its letter),
        # without the delimiter: lm-eval's doc_to_choice. The continuations say which style was scored.
        choices = [continuation.removeprefix(TARGET_DELIMITER) for continuation in group["continuation"]]
        pred, pred_norm = mcqa_predictions([group["loglik"].to_list()], [choices])
        rows.append({"id": sample["id"], "metric": "acc", "value": float(pred[0] == sample["answer"]), "status": "ok"})
        rows.append(
            {"id": sample["id"], "metric": "acc_norm", "value": float(pred_norm[0] == sample["answer"]), "status": "ok"}
        )
    return pl.DataFrame(rows, schema={"id": pl.String, "metric": pl.String, "value": pl.Float64, "status": pl.String})
