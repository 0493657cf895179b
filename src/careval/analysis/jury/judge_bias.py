"""Bias checks of each judge of a jury: length bias, self-preference, and a grade distribution stuck on one grade.

Per benchmark x rubric x judge, over the judge's grades judge_<rubric>@<judge> of the answers (model x sample):

* ``length_spearman``: Spearman's rho (scipy) between the grade and the answer's length in tokens; flagged where
  |rho| reaches ``length_bias_flag`` with p < 0.05. Tokens are whitespace-separated words, the same count for
  every judge, so no judge's own tokenizer decides it.
* ``self_preference`` (per evaluated model the judge is, or is of the family of; metrics.judge.same_family):
  the judge's mean grade of that model's answers minus the other judges' mean grade of the same answers
  (per answer: own grade - the mean of the others'; then the mean over answers). Needs two judges.
* ``share_grade_<g>`` for g = 1..5 and ``modal_grade_share``: the grade distribution; flagged where one grade
  takes more than ``one_grade_flag`` of the answers.

Intervals resample the sample ids (careval.analysis.jury.judge_agreement.bootstrap_intervals).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from careval.analysis.jury.judge_agreement import GRADE_SCALE, bootstrap_intervals, judge_grades, rater_matrix
from careval.analysis.statistics.exact import correlation, correlation_test
from careval.schemas import JUDGE_BIAS_SCHEMA

P_LEVEL = 0.05


def answer_lengths(generations: dict[tuple[str, str], pl.DataFrame]) -> pl.DataFrame:
    """model, benchmark, id, tokens from the generations files {(model, benchmark): frame}."""
    frames = [
        frame.select(
            model=pl.lit(model),
            benchmark=pl.lit(benchmark),
            id="id",
            # whitespace-separated words; no output counts 0
            tokens=pl.col("output").fill_null("").str.extract_all(r"\S+").list.len().cast(pl.Int64),
        )
        for (model, benchmark), frame in generations.items()
    ]
    schema = {"model": pl.String, "benchmark": pl.String, "id": pl.String, "tokens": pl.Int64}
    return pl.concat(frames).cast(schema) if frames else pl.DataFrame(schema=schema)


def self_preference(matrix: np.ndarray, judge: int, own: np.ndarray) -> tuple[float, int]:
    """(mean over `own` answers of the judge's grade minus the mean of the other judges' grades, answers used).

    `matrix`: judges x answers; `own`: a boolean mask of the answers of the judge's own model(s)."""
    others = np.delete(matrix, judge, axis=0)
    usable = own & np.isfinite(matrix[judge]) & np.isfinite(others).all(axis=0)
    if not usable.any() or others.shape[0] == 0:
        return math.nan, 0
    gaps = matrix[judge, usable] - others[:, usable].mean(axis=0)
    return float(gaps.mean()), int(usable.sum())


def judge_bias(
    samples: pl.DataFrame,
    lengths: pl.DataFrame,
    judges: list[str],
    own_models: dict[str, list[str]],
    length_bias_flag: float,
    one_grade_flag: float,
    bootstrap=None,
) -> pl.DataFrame:
    """JUDGE_BIAS_SCHEMA rows per benchmark x rubric x judge; `own_models`: judge -> the evaluated models whose
    answers its self-preference is measured on (itself where it is one, and metrics.judge.same_family)."""
    grades = judge_grades(samples)
    rows = []

    def row(benchmark, rubric, judge, check, value, n, model=None, interval=(None, None), p=None, flagged=None):
        rows.append(
            {
                "benchmark": benchmark,
                "rubric": rubric,
                "judge": judge,
                "check": check,
                "model": model,
                "value": value,
                "ci_low": interval[0],
                "ci_high": interval[1],
                "p": p,
                "n": n,
                "flagged": flagged,
            }
        )

    for (benchmark, rubric), block in grades.group_by("benchmark", "rubric", maintain_order=True):
        matrix, units = rater_matrix(block, judges)
        tokens = (
            units.join(lengths.filter(pl.col("benchmark") == benchmark), on=["model", "id"], how="left")["tokens"]
            .cast(pl.Float64)
            .fill_null(float("nan"))
            .to_numpy()
        )
        models = units["model"].to_numpy()
        masks = {j: np.isin(models, own_models.get(judge, [])) for j, judge in enumerate(judges)}

        def statistics(columns: np.ndarray, matrix=matrix, tokens=tokens, models=models) -> dict:
            out = {}
            for j, judge in enumerate(judges):
                # rho alone: a resample's exact p (all n! pairings below 10 answers) would go unread
                out[(judge, "length_spearman", None)] = correlation(matrix[j, columns], tokens[columns], "spearman")
                for model in own_models.get(judge, []):
                    mask = models[columns] == model
                    out[(judge, "self_preference", model)] = self_preference(matrix[:, columns], j, mask)[0]
            return out

        intervals = (
            bootstrap_intervals(units, statistics, bootstrap.resamples, bootstrap.confidence, bootstrap.seed)
            if bootstrap is not None
            else {}
        )
        for j, judge in enumerate(judges):
            grades_j = matrix[j][np.isfinite(matrix[j])]
            rho, p, _ = correlation_test(matrix[j], tokens, "spearman")  # exact p below 10 answers
            n_length = int((np.isfinite(matrix[j]) & np.isfinite(tokens)).sum())
            flagged = bool(math.isfinite(rho) and abs(rho) >= length_bias_flag and p < P_LEVEL)
            row(
                benchmark,
                rubric,
                judge,
                "length_spearman",
                rho,
                n_length,
                interval=intervals.get((judge, "length_spearman", None), (None, None)),
                p=p,
                flagged=flagged,
            )
            if len(judges) >= 2:
                for model in own_models.get(judge, []):
                    value, n = self_preference(matrix, j, masks[j] & (models == model))
                    row(
                        benchmark,
                        rubric,
                        judge,
                        "self_preference",
                        value,
                        n,
                        model=model,
                        interval=intervals.get((judge, "self_preference", model), (None, None)),
                    )
            n = grades_j.size
            shares = [float((grades_j == g).sum() / n) if n else math.nan for g in GRADE_SCALE]
            for g, share in zip(GRADE_SCALE, shares):
                row(benchmark, rubric, judge, f"share_grade_{g}", share, n)
            modal = max(shares) if n else math.nan
            row(benchmark, rubric, judge, "modal_grade_share", modal, n, flagged=bool(n and modal > one_grade_flag))
    return pl.DataFrame(rows, schema=JUDGE_BIAS_SCHEMA)
