"""The jury report job: agreement between judges, their biases, the jury's stability and the agreement with people,
each written as a summary table (the analysis report draws them: careval.analysis.figures.jury)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from careval.analysis.jury.human_ratings import (
    HUMAN_AGREEMENT_SCHEMA,
    RATER_AGREEMENT_SCHEMA,
    human_agreement,
    rater_agreement,
    read_human_ratings,
)
from careval.analysis.jury.judge_agreement import judge_agreement
from careval.analysis.jury.judge_bias import answer_lengths, judge_bias
from careval.analysis.jury.jury_stability import jury_stability
from careval.schemas import JUDGE_BIAS_SCHEMA
from careval.specs import JURY_REPORT_TABLES, JuryReportJob

OUTPUTS = JURY_REPORT_TABLES  # the rule's outputs carry these names


def generations_key(path: Path) -> tuple[str, str]:
    """(model, benchmark) of results/generations/<model>/<benchmark>.parquet."""
    return path.parent.name, path.stem


def write_jury_report(inputs: dict, outputs: dict[str, Path], job: JuryReportJob) -> None:
    """inputs: samples (per-sample table), generations (list of the judged benchmarks' generation files),
    resilience / consistency (tables or None), ratings (CSV or None), datasets (normalised benchmark parquets)."""
    samples = pl.read_parquet(inputs["samples"])
    bootstrap = job.bootstrap
    judges = list(job.judges)
    tables: dict[str, pl.DataFrame] = {}
    tables["judge_agreement"] = judge_agreement(samples, judges, bootstrap)
    lengths = answer_lengths({generations_key(Path(p)): pl.read_parquet(p) for p in inputs["generations"]})
    own = {judge: list(models) for judge, models in job.own_models.items()}
    if job.length_bias_flag is None or job.one_grade_flag is None:  # no metrics.judge: nothing was graded
        tables["judge_bias"] = pl.DataFrame(schema=JUDGE_BIAS_SCHEMA)
    else:
        tables["judge_bias"] = judge_bias(
            samples, lengths, judges, own, job.length_bias_flag, job.one_grade_flag, bootstrap
        )
    spreads = {key: pl.read_parquet(inputs[key]) if inputs.get(key) else None for key in ("resilience", "consistency")}
    tables["jury_stability"] = jury_stability(spreads)
    if inputs.get("ratings"):
        ids = {Path(p).stem: set(pl.read_parquet(p, columns=["id"])["id"].to_list()) for p in inputs["datasets"]}
        ratings = read_human_ratings(Path(inputs["ratings"]), list(job.models), ids, job.rating_range)
        print(f"jury report: {ratings.height} human ratings from {inputs['ratings']}")
        tables["human_rater_agreement"] = rater_agreement(ratings, bootstrap)
        tables["human_agreement"] = human_agreement(samples, ratings, bootstrap)
    else:
        tables["human_rater_agreement"] = pl.DataFrame(schema=RATER_AGREEMENT_SCHEMA)
        tables["human_agreement"] = pl.DataFrame(schema=HUMAN_AGREEMENT_SCHEMA)
    for key, frame in tables.items():
        print(f"jury report: {key}: {frame.height} rows")
        outputs[key].parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(outputs[key])
