"""The studies' own jobs: each study's per-sample table and tests, its review sheet, and Table 6's examples.

Each function is the body of a rule's job (its `body` param: careval.jobs.run), given the job's `snakemake` object;
it imports what it needs itself, so a job imports only its own body's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from careval.canonical import job_of


def study_sample_scores(snakemake: Any) -> None:
    """One study's per-sample table: every variant's values beside the baseline's (results/studies/<study>/sample_scores.parquet)."""
    from careval.analysis.studies.tables import write_study_table

    write_study_table(job_of(snakemake), list(snakemake.input), Path(snakemake.output[0]))


def studies_summary(snakemake: Any) -> None:
    """Every study's variants against their baselines: paired tests, Holm, rank agreement (results/summary/studies.parquet)."""
    from careval.analysis.studies.tables import write_studies

    write_studies(job_of(snakemake), list(snakemake.input.tables), snakemake.input.samples, Path(snakemake.output[0]))


def study_review_sheet(snakemake: Any) -> None:
    """A blind review sheet of a study's rephrasers (results/studies/<study>/review_sheet.csv and review_key.csv)."""
    from careval.analysis.studies.rephrasing_review import write_review_sheet

    write_review_sheet(
        job_of(snakemake), list(snakemake.input), Path(snakemake.output.sheet), Path(snakemake.output.key)
    )


def relaxed_perplexity_examples(snakemake: Any) -> None:
    """Relaxed Perplexity of one model of a study on the study's example questions (paper Table 6)."""
    from careval.jobs.relaxed_perplexity_examples import run_examples
    from careval.models.spec import model_for_job

    job = job_of(snakemake)
    spec = model_for_job(job.model, snakemake)
    run_examples(job, spec, Path(snakemake.output[0]))


def table6(snakemake: Any) -> None:
    """Paper Table 6: the example questions' Relaxed Cross-Entropy per model (results/tables/table6_relaxed_perplexity_examples.*)."""
    from careval.analysis.tables.table6 import write_table6

    outputs = {ext: Path(snakemake.output[ext]) for ext in ("csv", "md", "tex")}
    write_table6(job_of(snakemake), list(snakemake.input), outputs)
