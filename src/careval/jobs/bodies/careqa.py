"""The CareQA build's jobs (careval.careqa): its editions fetched and parsed, translated, rephrased and validated,
its review sheets and statistics.

Each function is the body of a rule's job (its `body` param: careval.jobs.run), given the job's `snakemake` object;
it imports what it needs itself, so a job imports only its own body's modules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from careval.canonical import job_of


def acquire(snakemake: Any) -> None:
    """Fetch or copy one MIR edition's booklet and answer key (an address or a local file each)."""
    from careval.careqa.acquire import acquire_edition

    (edition,) = job_of(snakemake).editions
    acquire_edition(edition, snakemake.output.booklet, snakemake.output.key)


def parse(snakemake: Any) -> None:
    """Parse every acquired edition into CareQA-close (Spanish) and count annulled and misparsed questions."""
    from careval.careqa.build import parse_editions

    parse_editions(
        list(job_of(snakemake).editions),
        list(snakemake.input.booklets),
        list(snakemake.input.answer_keys),
        snakemake.output.spanish,
        snakemake.output.report,
    )


def translate(snakemake: Any) -> None:
    """Translate CareQA-close from Spanish to English with the configured translator."""
    from careval.careqa.translate import translate_careqa

    with _step_model(snakemake) as (job, backend):
        translate_careqa(
            snakemake.input.spanish,
            backend,
            job.sampling,
            snakemake.output.english,
            snakemake.output.audit,
            snakemake.output.report,
        )


def filter_negative(snakemake: Any) -> None:
    """Screen out the questions that ask for the wrong option (appendix A.2 keyword filter)."""
    from careval.careqa.rephrase import build_screened

    build_screened(snakemake.input.english, snakemake.input.spanish, snakemake.output.screened, snakemake.output.report)


def rephrase(snakemake: Any) -> None:
    """Rephrase each kept question with two prompts and let the rephraser select one or neither (iteration 1)."""
    from careval.careqa.rephrase import build_iteration1

    with _step_model(snakemake) as (job, backend):
        build_iteration1(
            snakemake.input.english,
            snakemake.input.screened,
            backend,
            job.sampling,
            snakemake.output.audit,
            snakemake.output.report,
        )


def validate(snakemake: Any) -> None:
    """Ask, for each rephrased pair of one iteration, whether the ground truth is its only valid answer."""
    from careval.careqa.rephrase import build_validation

    with _step_model(snakemake) as (job, backend):
        build_validation(
            snakemake.input.candidates,
            backend,
            job.sampling,
            int(snakemake.wildcards.iteration),
            snakemake.output.audit,
            snakemake.output.report,
        )


def rephrase_iteration2(snakemake: Any) -> None:
    """Rephrase again, for a single valid answer, the pairs iteration 1's validator did not accept (iteration 2)."""
    from careval.careqa.rephrase import build_iteration2

    with _step_model(snakemake) as (job, backend):
        build_iteration2(
            snakemake.input.english,
            snakemake.input.validation,
            backend,
            job.sampling,
            snakemake.output.audit,
            snakemake.output.report,
        )


def open(snakemake: Any) -> None:
    """CareQA_en_open: the validated pairs of both iterations, each with the iteration it comes from."""
    from careval.careqa.rephrase import build_open

    build_open(
        snakemake.input.english, list(snakemake.input.validation), snakemake.output.open, snakemake.output.report
    )


def stage_counts(snakemake: Any) -> None:
    """Merge every CareQA stage's counts into stage_counts.json."""
    from careval.careqa.build import merge_stage_counts

    merge_stage_counts(list(snakemake.input), snakemake.output[0])


def review_sheet(snakemake: Any) -> None:
    """Draw the stratified human-review sample of one kind (translation or rephrasing) and write its blank sheet."""
    from careval.careqa.review import export_review

    export_review(
        snakemake.wildcards.review_kind,
        snakemake.input.english,
        snakemake.input.spanish,
        snakemake.input.open,
        job_of(snakemake).review,
        snakemake.output.sheet,
        snakemake.output.summary,
    )


def review_agreement(snakemake: Any) -> None:
    """The appendix A.3 agreement statistics of the filled review sheets of one kind."""
    from careval.careqa.review import write_agreement

    write_agreement(list(snakemake.input), snakemake.output[0], job_of(snakemake).review["min_reviewers"])


def statistics(snakemake: Any) -> None:
    """Table 4 and the tables of figures 5-7 (careval.careqa.statistics)."""
    from careval.careqa.statistics import write_careqa_statistics

    job = job_of(snakemake)
    sheets = {}  # <filled_sheets>/<kind>/<reviewer>.csv, by kind
    for path in snakemake.input.sheets:
        sheets.setdefault(Path(path).parent.name, []).append(path)
    write_careqa_statistics(
        snakemake.input.closed,
        snakemake.input.open,
        job.tokenizer,
        job.tokenizer_path,
        sheets,
        job.min_reviewers,
        snakemake.output,
    )


@contextmanager
def _step_model(snakemake: Any) -> Iterator[tuple[Any, Any]]:
    """The job's spec and its LLM step's model (translator, rephraser or validator) as every job takes its model
    (careval.models.spec.model_for_job), behind the request cache."""
    from careval.backends.cached import job_backend
    from careval.models.spec import model_for_job

    job = job_of(snakemake)
    with job_backend(model_for_job(job.model, snakemake)) as backend:
        yield job, backend
