"""A blind review sheet of a study's rephrasers (appendix C.1: "after manual inspection, the outputs of
Qwen2.5-72B-Instruct were deemed of higher quality"): answers drawn at random, each with every variant's rephrasing
beside it in an order of its own, and the key to that order in a file of its own.

results/studies/<study>/review_sheet.csv: row, model, benchmark, id, repeat, answer, rephrasing_1..V, preferred
(for the reviewer: the number of the best rephrasing, or `tie`), notes. review_key.csv: row, position, variant.
Only answers every variant rephrased (status ok, first run) are drawn, so each row compares all variants.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl

from careval.canonical import JobSpec, job_spec


@job_spec
class ReviewSource(JobSpec):
    variant: str
    model: str
    benchmark: str


@job_spec
class RephrasingReviewJob(JobSpec):
    """study_review_sheet: which rephrasing file is whose (input order: each source's rephrasings, then the answers
    of each model x benchmark), and how many rows to draw with which seed."""

    variants: tuple[str, ...]
    sources: tuple[ReviewSource, ...]
    answers: tuple[tuple[str, str], ...]  # (model, benchmark) of each answers file, after the rephrasings
    rows: int
    seed: int


def review_sheet(
    job: RephrasingReviewJob, rephrasings: list[Path], answers: list[Path]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(sheet, key): `rows` answers drawn from those every variant rephrased, variants in a per-row random order."""
    texts: dict[tuple, dict[str, str]] = {}
    for source, path in zip(job.sources, rephrasings):
        ok = pl.read_parquet(path).filter(pl.col("status") == "ok")
        for sample, repeat, output in ok.select("id", "repeat", "output").iter_rows():
            texts.setdefault((source.model, source.benchmark, sample, repeat), {})[source.variant] = output
    originals = {}
    for (model, benchmark), path in zip(job.answers, answers):
        for sample, output in pl.read_parquet(path).select("id", "output").iter_rows():
            originals[(model, benchmark, sample)] = output
    complete = sorted(key for key, by in texts.items() if len(by) == len(job.variants))
    rng = random.Random(job.seed)
    drawn = rng.sample(complete, min(job.rows, len(complete)))
    sheet, key = [], []
    for row, item in enumerate(drawn, start=1):
        order = list(job.variants)
        rng.shuffle(order)
        model, benchmark, sample, repeat = item
        sheet.append(
            {
                "row": row,
                "model": model,
                "benchmark": benchmark,
                "id": sample,
                "repeat": repeat,
                "answer": originals.get((model, benchmark, sample), ""),
                **{f"rephrasing_{i}": texts[item][variant] for i, variant in enumerate(order, start=1)},
                "preferred": "",
                "notes": "",
            }
        )
        key += [{"row": row, "position": i, "variant": variant} for i, variant in enumerate(order, start=1)]
    columns = ["row", "model", "benchmark", "id", "repeat", "answer"]
    columns += [f"rephrasing_{i}" for i in range(1, len(job.variants) + 1)] + ["preferred", "notes"]
    schema = {c: pl.Int64 if c in ("row", "repeat") else pl.String for c in columns}
    return (
        pl.DataFrame(sheet, schema=schema),
        pl.DataFrame(key, schema={"row": pl.Int64, "position": pl.Int64, "variant": pl.String}),
    )


def write_review_sheet(job: RephrasingReviewJob, inputs: list[str], sheet_path: Path, key_path: Path) -> None:
    paths = [Path(p) for p in inputs]
    sheet, key = review_sheet(job, paths[: len(job.sources)], paths[len(job.sources) :])
    sheet_path.parent.mkdir(parents=True, exist_ok=True)
    sheet.write_csv(sheet_path)
    key.write_csv(key_path)
