"""The judge's jobs: grade one model's answers on one benchmark, or its repeats (rephrasings, sampled answers).

`spec` is the judge's careval.models.spec.ModelSpec (from the plan); its system prompt is
prometheus-eval's absolute-grading one unless the entry sets its own. The judge loads only when
something is to be graded.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from careval.analysis.jury.repeat_judge import judge_repeats
from careval.backends.cached import job_backend
from careval.metrics.judge import judge_model_spec, score_judge


def _judge_backend(spec, record: Path | None):  # the cached backend job_backend returns
    spec = judge_model_spec(spec)
    print(f"judge: {spec.describe()}")
    return job_backend(spec, record)


def run_judge(
    samples_path: Path,
    generations_path: Path,
    output_path: Path,
    spec,
    options: dict,
    *,
    request_batch: int,
    record: Path | None = None,
    repeats_path: Path | None = None,
) -> None:
    """Grade one model's generations on one benchmark, or with `repeats_path` their repeats (rephrasings, sampled
    answers: careval.analysis.jury.repeat_judge), and write the score rows (judge_<rubric>, _expected), in batches of
    `request_batch` answers (careval.batches); `record`: the job's request counts."""
    samples, generations = pl.read_parquet(samples_path), pl.read_parquet(generations_path)
    if repeats_path is not None:
        print(f"judge: the repeats of {repeats_path}")
    with _judge_backend(spec, record) as judge:
        if repeats_path is None:
            scores = score_judge(judge, samples, generations, options, request_batch)
        else:
            repeats = pl.read_parquet(repeats_path)
            scores = judge_repeats(judge, samples, generations, repeats, options, request_batch)
            scores = scores.sort("metric", "id", "repeat")
    output_path.parent.mkdir(parents=True, exist_ok=True)
    scores.write_parquet(output_path)
