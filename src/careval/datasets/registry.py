"""The benchmark registry: one declarative entry per benchmark (source, field mapping, task, prompt, metrics)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

# Demo data ships with the repository (resources/demo), found from the package so that a run
# in any working directory reads it.
REPO_ROOT = Path(__file__).resolve().parents[3]
DEMO_DIR = REPO_ROOT / "resources" / "demo"

# The metric families each task is scored with; the scoring rules write one file per family.
TASK_METRICS: dict[str, tuple[str, ...]] = {
    "mcqa": ("accuracy",),
    "open": ("rouge", "bleu", "bertscore", "perplexity"),
}


@dataclass(frozen=True)
class HFSource:
    """A Hugging Face `datasets` source: the real code path on a machine with the hub."""

    repo: str
    split: str
    config: str | None = None


@dataclass(frozen=True)
class LocalSource:
    """A local jsonl or parquet file."""

    path: str


@dataclass(frozen=True)
class Benchmark:
    """How one benchmark maps onto the canonical sample schema and what is done with it.

    `fields` maps canonical columns to source fields. `options` may name one field holding a
    list (or a dict keyed by letter) or several fields (op1..op4). `answer_format` says how the
    gold answer is written in the source: index0, index1, letter or text (matched against the options).
    """

    name: str
    task: str
    source: HFSource | LocalSource
    fields: dict[str, str | list[str]]
    prompt: str
    answer_format: str = "index0"
    description: str = ""
    max_new_tokens: int | None = None
    meta_fields: tuple[str, ...] = field(default_factory=tuple)

    @property
    def metrics(self) -> tuple[str, ...]:
        return TASK_METRICS[self.task]


MCQA_PROMPT = "Question: {question}\nAnswer:"
OPEN_QA_PROMPT = (
    "You are a medical expert. Answer the following question accurately and concisely.\n\n"
    "Question: {question}\nAnswer:"
)
NOTE_PROMPT = (
    "Write the assessment and plan section of the clinical note for this doctor-patient "
    "conversation. Use only facts stated in the conversation.\n\n{question}\n\nNote:"
)

REGISTRY: dict[str, Benchmark] = {
    entry.name: entry
    for entry in [
        Benchmark(
            name="demo_mcqa",
            task="mcqa",
            source=LocalSource(str(DEMO_DIR / "demo_mcqa.jsonl")),
            fields={"id": "id", "question": "question", "options": "options", "answer": "answer"},
            prompt=MCQA_PROMPT,
            description="careval demo: four-option medical MCQA written by the project",
            meta_fields=("topic",),
        ),
        Benchmark(
            name="demo_open_qa",
            task="open",
            source=LocalSource(str(DEMO_DIR / "demo_open_qa.jsonl")),
            fields={"id": "id", "question": "question", "reference": "answer"},
            prompt=OPEN_QA_PROMPT,
            description="careval demo: open-ended medical questions with reference answers",
            meta_fields=("topic",),
        ),
        Benchmark(
            name="demo_note",
            task="open",
            source=LocalSource(str(DEMO_DIR / "demo_note.jsonl")),
            fields={"id": "id", "question": "dialogue", "reference": "note"},
            prompt=NOTE_PROMPT,
            description="careval demo: doctor-patient dialogue to assessment-and-plan note",
        ),
        # Real sources (the paper's own task definitions); the catalogue grows here.
        Benchmark(
            name="medqa",
            task="mcqa",
            source=HFSource("GBaker/MedQA-USMLE-4-options", split="test"),
            fields={"question": "question", "options": "options", "answer": "answer_idx"},
            prompt=MCQA_PROMPT,
            answer_format="letter",
            description="MedQA (USMLE, 4 options)",
        ),
        Benchmark(
            name="meqsum",
            task="open",
            source=HFSource("bigbio/meqsum", config="meqsum_source", split="train"),
            fields={"id": "File", "question": "CHQ", "reference": "Summary"},
            prompt="Summarize the following consumer health question in one short question.\n\n{question}\n\nSummary:",
            description="MeQSum consumer health question summarisation",
        ),
    ]
}


class UnknownBenchmarkError(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def get_benchmark(name: str, overrides: dict | None = None) -> Benchmark:
    """The registry entry, with a config's overrides (path, prompt, max_new_tokens) applied."""
    if name not in REGISTRY:
        raise UnknownBenchmarkError(
            f"unknown benchmark '{name}' in config: known are {', '.join(sorted(REGISTRY))}"
        )
    entry = REGISTRY[name]
    overrides = overrides or {}
    if overrides.get("path"):
        entry = replace(entry, source=LocalSource(overrides["path"]))
    if overrides.get("prompt"):
        entry = replace(entry, prompt=overrides["prompt"])
    if overrides.get("max_new_tokens"):
        entry = replace(entry, max_new_tokens=overrides["max_new_tokens"])
    return entry
