"""A user's plugin (a config's `plugins:`, careval.plugins): a toy job kind and a toy study kind, a few lines each.

The job kind is a metric family (careval.metrics.registry.FAMILIES) that a benchmark entry asks for
(`extra_metrics`): the run's scoring rule (score_family) scores it with this file's scorer. The study kind sweeps a
benchmark's prompt under a section of its own (careval.plan.study_kinds), re-running the study's models' jobs.
"""

from __future__ import annotations

import polars as pl

from careval.metrics.registry import FAMILIES, MetricFamily, MetricSpec
from careval.plan.study_kinds import StudyKind, register_study_kind
from careval.schemas import SCORE_SCHEMA

LENGTH = MetricSpec("toy_length", "toy_length", False, bounds=(0.0, float("inf")), label="toy length")
FAMILIES["toy_length"] = MetricFamily(
    "toy_length", "toy", job="extra", metrics=(LENGTH,), scorer="toy_kinds:score_length"
)
register_study_kind(
    StudyKind("prompting", "model", ("prompt",), "benchmarks", ("infer_open", "infer_closed", "score_family"))
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
