"""The Prometheus judge on repeated outputs: every rephrasing (resilience) and every sampled answer (self-consistency).

The paper's findings in sections 3.4-3.5 are about the judge as much as about the text metrics
(figures 2, 13-16), so each repeat is graded as the main answers are: same prompts, rubrics and
parser (careval.metrics.judge.score_judge), the instruction being the prompt the model answered
(the generations file's `prompt`: self-consistency samples answer that same prompt). `limit`
bounds the cost by samples, each sample with all its repeats.
"""

from __future__ import annotations

import polars as pl

from careval.analysis.spread import REPEAT_SCORE_SCHEMA, SEPARATOR


def repeats_as_generations(generations: pl.DataFrame, repeats: pl.DataFrame, limit: int | None) -> pl.DataFrame:
    """One generations-like row per repeat (id "<id>\\x1f<repeat>", the sample's prompt), for the first `limit` samples.

    A repeat whose sample has no generation (not in the generations file) keeps its own status
    with an empty prompt; it is never graded unless ok.
    """
    ids = generations["id"].unique(maintain_order=True)
    if limit:
        ids = ids.head(limit)
    prompts = generations.select("id", "prompt").unique("id", keep="first")
    kept = repeats.filter(pl.col("id").is_in(ids.implode()))
    return kept.join(prompts, on="id", how="left", maintain_order="left").select(
        id=pl.col("id") + SEPARATOR + pl.col("repeat").cast(pl.String),
        prompt=pl.col("prompt").fill_null(""),
        output="output",
        status="status",
    )


def judge_repeats(
    judge, samples: pl.DataFrame, generations: pl.DataFrame, repeats: pl.DataFrame, options: dict
) -> pl.DataFrame:
    """Judge scores per sample, repeat and metric (REPEAT_SCORE_SCHEMA), `judge` a backend or a factory."""
    from careval.metrics.judge import score_judge

    keyed = repeats_as_generations(generations, repeats, options.get("limit"))
    references = (
        keyed.select("id")
        .with_columns(sample=pl.col("id").str.split(SEPARATOR).list.first())
        .join(samples.select(sample="id", reference="reference"), on="sample", how="left", maintain_order="left")
    )
    # the limit is already applied by samples (each with all its repeats), not by rows
    scores = score_judge(judge, references.select("id", "reference"), keyed, {**options, "limit": None})
    scores = scores.filter(pl.col("level") == "sample")
    parts = scores["id"].str.split_exact(SEPARATOR, 1)
    return scores.select(
        id=parts.struct.field("field_0"),
        repeat=parts.struct.field("field_1").cast(pl.Int64),
        metric="metric",
        value="value",
        status="status",
    ).cast(REPEAT_SCORE_SCHEMA)
