"""The kinds of study, one registered entry each (:func:`register_study_kind`): the config section a study's sweep
names, the settings it may sweep there, where a variant's values go, what it re-runs, and the job kinds that read
them. The schema's sweep sections, the checks at the door (careval.plan.study_checks) and the planning of the
variants (careval.plan.variants) all read :data:`STUDY_KINDS`."""

from __future__ import annotations

from dataclasses import dataclass, replace

from careval.metrics.registry import FAMILIES


@dataclass(frozen=True)
class StudyKind:
    """A kind of study, one registered entry: the config section its sweep names, the settings it may sweep there,
    where a variant's settings go, what it re-runs, and the job kinds (rules) reading those settings."""

    section: str  # a key of a study's `sweep` (a metric family's: "metrics.<family>", registered as "metrics")
    reruns: str  # "model" (the study's models' jobs), "metric" (the family's scoring), "analysis" (the rephrasings)
    settings: tuple[str, ...]  # what it may sweep (a dotted setting's first part); metrics: the family's options
    # where a variant's values go: "models" (each of the study's models' entries), "benchmarks" (each of its
    # benchmarks' entries), "section" (the config section itself), "swap" (section models: other models in place)
    target: str
    # the rules whose jobs read the swept settings: every job a variant runs is one of them (tests/workflow/
    # test_studies_dag.py holds a run's to it)
    jobs: tuple[str, ...] = ()


# every study kind, by section (register_study_kind); the schema's sweep sections are checked against these
STUDY_KINDS: dict[str, StudyKind] = {}


def register_study_kind(kind: StudyKind) -> StudyKind:
    STUDY_KINDS[kind.section] = kind
    return kind


_MODEL_JOBS = ("infer_open", "infer_closed", "relaxed_perplexity", "llm_family", "score_family", "judge")
# the keys of a model entry a study may sweep: what changes a model's outputs, its weights aside (section `models`)
register_study_kind(
    StudyKind(
        "model",
        "model",
        # a served model's too: its API, served model or address (endpoint.api, ...), its tokenizer
        (
            "backend",
            "chat_template",
            "system_prompt",
            "dtype",
            "batch_size",
            "max_length",
            "vllm_args",
            "endpoint",
            "tokenizer",
        ),
        "models",
        _MODEL_JOBS,
    )
)
register_study_kind(StudyKind("models", "model", (), "swap", _MODEL_JOBS))
# the keys of a benchmark entry a model job reads (careval.specs.PROMPT_KEYS, the layout aside, and the decoding)
register_study_kind(
    StudyKind(
        "benchmark", "model", ("prompt", "mcqa_style", "mode", "max_new_tokens", "stop"), "benchmarks", _MODEL_JOBS
    )
)
register_study_kind(
    StudyKind("generation", "model", ("max_new_tokens", "temperature", "top_p", "seed", "stop"), "section", _MODEL_JOBS)
)
register_study_kind(
    StudyKind(
        "analysis.resilience",
        "analysis",
        ("rephraser", "k", "limit", "sampling"),
        "section",
        ("rephrase", "score_rephrase", "judge_repeats"),
    )
)
# a metric family's options (its registry entry's): that family's scoring jobs
register_study_kind(
    StudyKind("metrics", "metric", (), "section", ("score_family", "relaxed_perplexity", "llm_family", "judge"))
)


def study_kind(section: str) -> StudyKind:
    """The registered kind of a sweep's section (metrics.<family>: the family's options)."""
    if section.startswith("metrics."):
        family = section.split(".", 1)[1]
        return replace(STUDY_KINDS["metrics"], section=section, settings=tuple(FAMILIES[family].options))
    return STUDY_KINDS[section]
