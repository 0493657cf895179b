"""A user's plugin (a config's `plugins:`, careval.plugins): two toy job kinds and a toy study kind, a few lines each.

The job kinds are metric families (careval.metrics.registry.FAMILIES) that a benchmark entry asks for
(`extra_metrics`): one scored from the answers by the run's scoring rule (score_family) with this file's scorer, one
computed by the evaluated model itself in a job of its own (rule llm_family) with this file's runner. The study kind
sweeps a benchmark's prompt under a section of its own (careval.plan.study_kinds), re-running the study's models' jobs.
"""

from __future__ import annotations

import polars as pl

from careval.metrics.registry import FAMILIES, MetricFamily, MetricSpec
from careval.plan.study_kinds import StudyKind, register_study_kind
from careval.schemas import SCORE_SCHEMA
from careval.tasks.open import generation_prompts
from careval.tasks.prompts import without_instruction

LENGTH = MetricSpec("toy_length", "toy_length", False, bounds=(0.0, float("inf")), label="toy length")
FAMILIES["toy_length"] = MetricFamily(
    "toy_length", "toy", job="extra", metrics=(LENGTH,), scorer="toy_kinds:score_length"
)
REFERENCE = MetricSpec("toy_reference_loglik", "toy_reference_loglik", True, bounds=(-float("inf"), 0.0), label="toy")
FAMILIES["toy_reference_loglik"] = MetricFamily(
    "toy_reference_loglik", "toy", job="llm", metrics=(REFERENCE,), runner="toy_kinds:reference_loglik", logprobs=True
)
register_study_kind(
    StudyKind(
        "prompting", "model", ("prompt",), "benchmarks", ("infer_open", "infer_closed", "score_family", "llm_family")
    )
)


def score_length(samples, generations, logliks, options, min_chars=1) -> pl.DataFrame:
    """An answer's length in characters (a failed answer: its status, no value)."""
    ok = generations["status"] == "ok"
    return pl.DataFrame(
        {
            "id": generations["id"],
            "metric": "toy_length",
            "value": pl.Series([float(len(text)) if good else None for text, good in zip(generations["output"], ok)]),
            "status": generations["status"],
            "level": "sample",
            "weight": 1.0,
        },
        schema=SCORE_SCHEMA,
    )


def reference_loglik(samples, backend, entry, options) -> pl.DataFrame:
    """The model's log-likelihood of each sample's reference answer after the benchmark's prompt, sent as the model
    is sent a request (Backend.request_pair: its chat template, the benchmark's instruction apart)."""
    prompts = [without_instruction(prompt, entry.instruction) for prompt in generation_prompts(samples, entry.prompt)]
    pairs = [backend.request_pair(p, " " + ref, entry.instruction) for p, ref in zip(prompts, samples["reference"])]
    values = backend.loglikelihood(pairs)
    return pl.DataFrame(
        {
            "id": samples["id"],
            "metric": "toy_reference_loglik",
            "value": values,
            "status": "ok",
            "level": "sample",
            "weight": 1.0,
        },
        schema=SCORE_SCHEMA,
    )
