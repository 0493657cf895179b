"""The Prometheus judge on repeated outputs: every rephrasing (resilience) and every sampled answer (self-consistency).

The paper's findings in sections 3.4-3.5 are about the judge as much as about the text metrics
(figures 2, 13-16), so each repeat is graded as the main answers are: same prompts, rubrics and
parser (careval.metrics.judge.score_judge), the instruction being the prompt the model answered
(the generations file's `prompt`: self-consistency samples answer that same prompt). `limit`
bounds the cost by samples, each sample with all its repeats.
"""

from __future__ import annotations

import polars as pl

from careval.analysis.statistics.spread import repeat_key, unkey_repeats


def repeats_as_generations(
    samples: pl.DataFrame, generations: pl.DataFrame, repeats: pl.DataFrame, limit: int | None
) -> pl.DataFrame:
    """One generations-like row per repeat (id: repeat_key(), the sample's prompt and reference), for the first
    `limit` samples, each with all its repeats.

    A repeat whose sample has no generation (not in the generations file) keeps its own status
    with an empty prompt; it is never graded unless ok.
    """
    ids = generations["id"].unique(maintain_order=True)
    if limit:
        ids = ids.head(limit)
    prompts = generations.select("id", "prompt").unique("id", keep="first")
    return (
        repeats.filter(pl.col("id").is_in(ids.implode()))
        .join(prompts, on="id", how="left", maintain_order="left")
        .join(samples.select("id", "reference"), on="id", how="left", maintain_order="left")
        .select(
            id=repeat_key(),
            prompt=pl.col("prompt").fill_null(""),
            output="output",
            status="status",
            reference="reference",
        )
    )


def judge_repeats(
    judge,
    samples: pl.DataFrame,
    generations: pl.DataFrame,
    repeats: pl.DataFrame,
    options: dict,
    request_batch: int | None = None,
) -> pl.DataFrame:
    """Judge scores per sample, repeat and metric (REPEAT_SCORE_SCHEMA); `judge` a backend, `request_batch` as the
    judge job's (careval.metrics.judge.score_judge)."""
    from careval.metrics.judge import score_judge

    keyed = repeats_as_generations(samples, generations, repeats, options.get("limit"))
    # the limit is already applied by samples (each with all its repeats), not by rows
    scores = score_judge(judge, keyed.select("id", "reference"), keyed, {**options, "limit": None}, request_batch)
    return unkey_repeats(scores.filter(pl.col("level") == "sample"))
