"""People's ratings of the evaluated answers: read and check the CSV, the raters' own agreement, and how far
every metric and every judge agrees with the raters' mean ("which metrics agree with people").

The CSV (analysis.human_ratings) has columns model, benchmark, id, criterion, rating, rater: one rating of one
model's answer to one sample, by one rater, under one criterion (a judge rubric, e.g. helpfulness, or a
criterion of its own). A bad row is a one-line HumanRatingsError naming the file, the line and the field.

Per benchmark x criterion, over the answers (model x sample):

* the raters' agreement (units x raters): Krippendorff's alpha (interval, ordinal), ICC(2,1), ICC(2,k);
* each metric's agreement with the raters' mean rating of each answer: Spearman's rho (scipy), and ICC(2,1)
  between the two after each is standardised (z-scores over the answers): the metrics' scales differ (ROUGE
  0-1, perplexity unbounded), so the absolute-agreement ICC is read on a common scale; for a
  lower-is-better metric the sign is flipped first, so agreement is always positive.

Intervals resample the sample ids (careval.analysis.jury.judge_agreement.bootstrap_intervals).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import spearmanr

from careval.analysis.jury.judge_agreement import bootstrap_intervals, rater_matrix
from careval.analysis.statistics.reliability import icc, krippendorff_alpha
from careval.metrics.registry import VALUED_STATUSES, higher_is_better
from careval.schemas import HUMAN_AGREEMENT_SCHEMA, RATER_AGREEMENT_SCHEMA, RATINGS_SCHEMA
from careval.textio import TextDecodeError, read_text

COLUMNS = ("model", "benchmark", "id", "criterion", "rating", "rater")


class HumanRatingsError(ValueError):
    """A bad ratings file; the message is one line naming the file, the line and the field."""


def read_human_ratings(
    path: Path,
    models: list[str],
    sample_ids: Mapping[str, set[str] | None],
    rating_range: tuple[float, float],
) -> pl.DataFrame:
    """The ratings (RATINGS_SCHEMA), every row checked: a known model, a known benchmark and sample id
    (`sample_ids`: benchmark -> its ids; None where they are not known yet, before the benchmark is normalised),
    a rating in `rating_range`, a criterion and a rater, and one rating per rater, answer and criterion: the same
    row twice is read once, two different ratings of one answer by one rater are an error (their mean would be
    a rating the rater never gave). The file is read as UTF-8, a spreadsheet's byte-order mark dropped."""
    low, high = rating_range
    try:
        text = read_text(path)
    except TextDecodeError as error:
        raise HumanRatingsError(str(error)) from None
    # (line in the file, text) of every line that is not a '#' comment: the header is the first of them
    lines = enumerate(text.splitlines(keepends=True), start=1)
    kept = [(number, line) for number, line in lines if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("".join(line for _, line in kept), newline=""))
    header_line = kept[0][0] if kept else 1
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise HumanRatingsError(
            f"{path}: line {header_line}: missing column {', '.join(missing)} (need {', '.join(COLUMNS)})"
        )
    rows: dict[tuple[str, str, str, str, str], tuple[float, int, str]] = {}  # the key's rating, line and cell
    for record in reader:
        # the reader counts the lines of the comment-free text (a quoted cell may span several): back to the file's
        line = kept[min(reader.line_num, len(kept)) - 1][0]

        def bad(field: str, why: str, line: int = line) -> HumanRatingsError:
            return HumanRatingsError(f"{path}: line {line}: field {field}: {why}")

        for field in COLUMNS:
            if not (record.get(field) or "").strip():
                raise bad(field, "empty")
        model, benchmark, sample = record["model"].strip(), record["benchmark"].strip(), record["id"].strip()
        if model not in models:
            raise bad("model", f"'{model}' is not an evaluated model (have: {', '.join(models)})")
        if benchmark not in sample_ids:
            raise bad("benchmark", f"'{benchmark}' is not a benchmark of this run (have: {', '.join(sample_ids)})")
        known = sample_ids[benchmark]
        if known is not None and sample not in known:
            raise bad("id", f"'{sample}' is not a sample id of {benchmark}")
        try:
            rating = float(record["rating"])
        except ValueError:
            raise bad("rating", f"'{record['rating']}' is not a number") from None
        if not (math.isfinite(rating) and low <= rating <= high):
            raise bad("rating", f"{record['rating']} is outside the declared range [{low:g}, {high:g}]")
        key = (model, benchmark, sample, record["criterion"].strip(), record["rater"].strip())
        if key in rows and rows[key][0] != rating:
            _, first_line, cell = rows[key]
            raise bad(
                "rating",
                f"{record['rating'].strip()} conflicts with {cell} on line {first_line}: rater '{key[4]}' rated "
                f"{model}'s answer to {benchmark} {sample} ({key[3]}) twice; keep one rating",
            )
        rows.setdefault(key, (rating, line, record["rating"].strip()))
    if not rows:
        raise HumanRatingsError(f"{path}: line {header_line + 1}: field rating: the file has no ratings")
    table = [(*key[:4], rating, key[4]) for key, (rating, _, _) in rows.items()]
    return pl.DataFrame(table, schema=RATINGS_SCHEMA, orient="row")


def rater_agreement(ratings: pl.DataFrame, bootstrap=None) -> pl.DataFrame:
    """RATER_AGREEMENT_SCHEMA rows per benchmark x criterion: the raters' alpha and ICCs over the answers."""
    rows = []
    for (benchmark, criterion), block in ratings.group_by("benchmark", "criterion", maintain_order=True):
        raters = sorted(block["rater"].unique().to_list())
        matrix, units = rater_matrix(block.rename({"rating": "value"}), raters, rater_column="rater")

        def statistics(columns: np.ndarray, matrix: np.ndarray = matrix) -> dict:
            m = matrix[:, columns]
            single, average = icc(m)
            return {
                "krippendorff_alpha_interval": krippendorff_alpha(m, "interval"),
                "krippendorff_alpha_ordinal": krippendorff_alpha(m, "ordinal"),
                "icc_2_1": single,
                "icc_2_k": average,
            }

        values = statistics(np.arange(matrix.shape[1]))
        intervals = (
            bootstrap_intervals(units, statistics, bootstrap.resamples, bootstrap.confidence, bootstrap.seed)
            if bootstrap is not None and len(raters) >= 2
            else {}
        )
        pairable = int((np.isfinite(matrix).sum(axis=0) >= 2).sum())
        complete = int(np.isfinite(matrix).all(axis=0).sum())
        for statistic, value in values.items():
            low, high = intervals.get(statistic, (None, None))
            rows.append(
                {
                    "benchmark": benchmark,
                    "criterion": criterion,
                    "statistic": statistic,
                    "raters": " | ".join(raters),
                    "value": value,
                    "ci_low": low,
                    "ci_high": high,
                    "n": pairable if statistic.startswith("krippendorff") else complete,
                }
            )
    return pl.DataFrame(rows, schema=RATER_AGREEMENT_SCHEMA)


def _standardised(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.full_like(x, np.nan)


def metric_human_statistics(metric: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """Spearman's rho and the standardised ICC(2,1) of a metric's values and the raters' mean over the same answers."""
    both = np.isfinite(metric) & np.isfinite(human)
    x, y = metric[both], human[both]
    if x.size < 3 or np.unique(x).size < 2 or np.unique(y).size < 2:
        return {"spearman": math.nan, "icc_2_1_standardised": math.nan}
    rho = float(spearmanr(x, y).statistic)
    single, _ = icc(np.vstack([_standardised(x), _standardised(y)]))
    return {"spearman": rho, "icc_2_1_standardised": single}


def human_agreement(samples: pl.DataFrame, ratings: pl.DataFrame, bootstrap=None) -> pl.DataFrame:
    """HUMAN_AGREEMENT_SCHEMA rows per benchmark x criterion x metric: every metric of the per-sample table
    (the judges' and the jury's included) against the raters' mean rating of each answer."""
    mean = ratings.group_by("model", "benchmark", "id", "criterion", maintain_order=True).agg(
        human=pl.col("rating").mean()
    )
    valued = samples.filter(pl.col("status").is_in(VALUED_STATUSES)).select(
        "model", "benchmark", "id", "metric", "value"
    )
    rows = []
    for (benchmark, criterion), block in mean.group_by("benchmark", "criterion", maintain_order=True):
        block = block.sort("model", "id")
        scores = valued.filter(pl.col("benchmark") == benchmark)
        # every metric of the benchmark, one with no valued answer too (NaN, n 0: counted, never dropped)
        for metric in sorted(samples.filter(pl.col("benchmark") == benchmark)["metric"].unique().to_list()):
            joined = block.join(
                scores.filter(pl.col("metric") == metric).select("model", "id", "value"),
                on=["model", "id"],
                how="left",
            )
            sign = 1.0 if higher_is_better(metric) else -1.0
            values = sign * joined["value"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
            human = joined["human"].to_numpy().astype(float)
            units = joined.select("model", "id")
            estimates = metric_human_statistics(values, human)
            intervals = (
                bootstrap_intervals(
                    units,
                    lambda cols, values=values, human=human: metric_human_statistics(values[cols], human[cols]),
                    bootstrap.resamples,
                    bootstrap.confidence,
                    bootstrap.seed,
                )
                if bootstrap is not None
                else {}
            )
            n = int((np.isfinite(values) & np.isfinite(human)).sum())
            for statistic, value in estimates.items():
                low, high = intervals.get(statistic, (None, None))
                rows.append(
                    {
                        "benchmark": benchmark,
                        "criterion": criterion,
                        "metric": metric,
                        "statistic": statistic,
                        "value": value,
                        "ci_low": low,
                        "ci_high": high,
                        "n": n,
                    }
                )
    return pl.DataFrame(rows, schema=HUMAN_AGREEMENT_SCHEMA)
