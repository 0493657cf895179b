"""Open-ended generation: prompts for the model, and the reference log-likelihood requests behind perplexity."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from careval.schemas import GENERATION_SCHEMA, LOGLIK_REQUEST_SCHEMA
from careval.tasks.prompts import fill_prompt


def generation_prompts(samples: pl.DataFrame, template: str) -> list[str]:
    return [fill_prompt(template, sample) for sample in samples.iter_rows(named=True)]


def generation_rows(
    samples: pl.DataFrame,
    prompts: list[str],
    outputs: list[str],
    usage: Sequence[Sequence[int]] = (),
    failed: Sequence[str] = (),
) -> pl.DataFrame:
    """A blank output is kept and marked `empty_output`, so metrics count it instead of scoring it 0. `usage`: each
    prompt's (read, generated) tokens, as the backend counted them (none: null); `failed`: each prompt's status where
    the backend's request failed (a served model's reply still malformed after its retries: `malformed_reply`), else
    none (Backend.last_status)."""
    statuses = ["ok" if output.strip() else "empty_output" for output in outputs]
    if len(failed) == len(outputs):
        statuses = [status if why == "ok" else why for status, why in zip(statuses, failed)]
    counted = list(usage) if len(usage) == len(outputs) else [(None, None)] * len(outputs)
    return pl.DataFrame(
        {
            "id": samples["id"],
            "prompt": prompts,
            "output": outputs,
            "status": statuses,
            "prompt_tokens": [u[0] for u in counted],
            "generated_tokens": [u[1] for u in counted],
            "cut_tokens": [u[2] if len(u) > 2 else None for u in counted],
        },
        schema=GENERATION_SCHEMA,
    )


def loglik_requests(samples: pl.DataFrame, template: str) -> pl.DataFrame:
    """Perplexity of the reference two ways: alone (lm-eval's rolling definition) and given the question."""
    rows = []
    for sample in samples.iter_rows(named=True):
        rows.append(
            {
                "id": sample["id"],
                "kind": "reference",
                "option": None,
                "context": "",
                "continuation": sample["reference"],
            }
        )
        rows.append(
            {
                "id": sample["id"],
                "kind": "reference_given_question",
                "option": None,
                "context": fill_prompt(template, sample),
                "continuation": " " + sample["reference"],
            }
        )
    return pl.DataFrame(rows, schema=LOGLIK_REQUEST_SCHEMA)
