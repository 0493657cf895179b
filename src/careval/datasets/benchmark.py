"""A benchmark's typed spec: where its data comes from (HFSource, LocalSource) and how it maps onto the
canonical sample (Benchmark). Only data classes and task facts: the catalogue lists entries of these,
the registry looks them up, the loaders read their sources."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASKS = ("mcqa", "open", "classification", "extraction", "prescription")
# The careval task an lm-eval task runs as, by its output type: its choices scored like MCQA, its generations
# like an open task's; a log-likelihood task ("likelihood", only ever an lm-eval task's) is scored by lm-eval alone.
LM_EVAL_OUTPUT_TASKS = {
    "multiple_choice": "mcqa",
    "generate_until": "open",
    "loglikelihood": "likelihood",
    "loglikelihood_rolling": "likelihood",
}
# Tasks whose gold is an index into `options` (the others have a text `reference`).
CHOICE_TASKS = ("mcqa", "classification", "prescription")

# The repository's root, found from the package, so that a run in any working directory reads the files it
# ships (the demo data under resources/demo, the Elo ratings).
REPO_ROOT = Path(__file__).resolve().parents[3]

# Tasks whose every benchmark generates text; classification generates only in `mode: generate`.
GENERATING_TASKS: tuple[str, ...] = ("open", "extraction")


@dataclass(frozen=True)
class HFSource:
    """A Hugging Face `datasets` source: the real code path on a machine with the hub."""

    repo: str
    split: str
    config: str | None = None
    data_files: str | None = None  # one file of the repo, for repos that hold one file per subset
    # a branch or commit: bigbio's datasets are loading scripts, which `datasets` >= 4 no longer runs;
    # the hub's parquet export of them lives on the branch refs/convert/parquet
    revision: str | None = None


@dataclass(frozen=True)
class LocalSource:
    """A local jsonl, json, csv, xml or parquet file; `hint` says how to obtain it when it is missing."""

    path: str
    hint: str = ""


@dataclass(frozen=True)
class LmEvalSource:
    """An lm-eval task (or group) as the source of a benchmark: its documents and requests as lm-eval builds them
    (careval.datasets.lm_eval_tasks). `include`: a folder of the user's own task YAMLs. What the plan needs of the
    task is read from its YAML at plan time: `output_type`, the `metrics` it is scored with (lm-eval's names, a
    filter other than "none" after a comma), and lm-eval's generation settings of a generate_until task."""

    task: str
    include: str | None
    output_type: str  # multiple_choice | loglikelihood | generate_until | loglikelihood_rolling
    metrics: tuple[str, ...]
    # generate_until: lm-eval's normalised generation_kwargs (until, max_gen_toks, temperature, do_sample, ...)
    generation: dict[str, Any] | None = None


@dataclass(frozen=True)
class Benchmark:
    """How one benchmark maps onto the canonical sample schema and what is done with it: a catalogue file or a
    config entry (the config schema's $defs/benchmark) as built by careval.datasets.definition, every default
    filled from the schema.

    `fields` maps canonical columns (id, question, context, options, answer, reference) to source
    fields; a field may be a path into nested data ("QUESTION.AnswerList[0].Answer.AnswerText",
    "answers[].atext"). `options` may name one field holding a list (or a dict keyed by letter)
    or several fields (op1..op4); `choices` gives options shared by every row instead (class names,
    yes/no/maybe). `answer_format` says how the gold answer is written in the source: index0,
    index1, letter or text (matched against the options). `meta_fields` copies source fields into
    the sample's meta (a tuple keeps their names, a dict renames: meta key -> source path).
    `transform` names a function of datasets/transforms.py that reshapes a raw row first (or drops
    it, returning None). An lm-eval task (source LmEvalSource) has no fields: lm-eval builds its samples.
    """

    name: str
    task: str
    source: HFSource | LocalSource | LmEvalSource
    fields: dict[str, str | list[str]]
    prompt: str
    answer_format: str
    description: str
    max_new_tokens: int | None
    meta_fields: tuple[str, ...] | dict[str, str]
    choices: tuple[str, ...] | None
    transform: str | None
    mode: str  # classification: the label by option log-likelihood, or parsed from a generation
    on_bad_row: str  # or "skip": a malformed row is dropped and counted
    select: dict[str, str]  # keep rows whose field equals the value
    # keep the first int(fraction * n) of the n (selected) source rows, in file order, before any
    # transform: the authors' process_docs "first 10%" (not `limit`, which counts valid samples)
    fraction: float | None
    # families with job "extra" in careval.metrics.registry this benchmark is scored with too (F1-RadGraph)
    extra_metrics: tuple[str, ...]
    # generation stops at the first of these strings (the authors' lm-eval `until`); None: the
    # config's `generation.stop` applies instead
    stop: tuple[str, ...] | None
    # text metrics score a sample only when its output and reference have at least this many characters
    # (the authors' process_results: 1, 5 for MTS-Dialog and MIMIC-III, 10 for OLAPH); else status too_short
    min_chars: int
    mcqa_style: str
    # the paper's task (its Table 1) this benchmark belongs to: groups benchmarks into the Appendix E tables
    # (careval.analysis.tables.paper_tables.PAPER_TASKS); None: in no paper table
    paper_task: str | None
    # the dataset as the paper's Table 1 names it (this entry is it, or a subset or subject of it); None: not in
    # Table 1, careval's addition (a config's own benchmarks, lm-eval tasks too), marked with a dagger wherever the
    # paper's figures and tables name it
    paper_dataset: str | None
    # the text `prompt` starts with, as written: lm-eval's task `description` (MMLU's "The following are ... about
    # anatomy.\n\n", the authors' "Instructions: ..."), which lm-eval sends as the system turn under a chat template
    # (careval.backends.base.Backend.request_pair); "": none
    instruction: str = ""

    @property
    def addition(self) -> bool:
        """Whether the benchmark is careval's addition: no dataset of the paper's Table 1."""
        return self.paper_dataset is None

    @property
    def lm_eval(self) -> LmEvalSource | None:
        """The lm-eval task this benchmark runs, or None (a catalogue-style benchmark)."""
        return self.source if isinstance(self.source, LmEvalSource) else None

    def facts(self, keys: tuple[str, ...]) -> dict[str, Any]:
        """The values of `keys` (field names): what a job reading them is identified by (careval.specs)."""
        return {key: getattr(self, key) for key in keys}

    @property
    def generates(self) -> bool:
        """Whether the model generates text on this benchmark (else it is scored by log-likelihood only)."""
        return self.task in GENERATING_TASKS or (self.task == "classification" and self.mode == "generate")

    @property
    def computes_logliks(self) -> bool:
        """Whether its inference asks the model for log-likelihoods: the options of a choice task scored by
        log-likelihood, the reference of an open one (perplexity), an lm-eval task's requests (a generating one's:
        its reference's perplexity); none where it is scored on generations alone."""
        return self.lm_eval is not None or self.task == "open" or (self.task in CHOICE_TASKS and not self.generates)
