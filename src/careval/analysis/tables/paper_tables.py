"""The paper's Appendix E tables (7-20) and its tasks (Table 1): which benchmarks and metrics each table holds.

One registry, read by the plan (which tables a config fills), the table job (careval.analysis.tables.paper_table_files)
and the report (one PDF page per table). A benchmark's paper task is a fact of its catalogue entry
(Benchmark.paper_task); a metric's being one of the paper's eleven is a fact of the metric registry
(MetricSpec.paper). The paper prints only the tables' captions' grouping, not their numbers' layout in
machine-readable form: each table here is models x (benchmark, metric), the layout of its PDF.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from careval.canonical import JobSpec, job_spec
from careval.metrics.registry import JUDGE_EXPECTED_SUFFIX, JUDGE_PREFIX, JUDGE_SEPARATOR, METRICS, metric_spec
from careval.specs import Bootstrap

# The paper's tasks (Table 1), in its order: four close-ended, then six open-ended.
PAPER_TASKS = {
    "multiple_choice_questions": "Multiple choice questions",
    "prescriptions_writing": "Prescriptions writing",
    "medical_text_classification": "Medical text classification",
    "relation_extraction": "Relation extraction",
    "open_ended_medical_questions": "Open-ended medical questions",
    "diagnosis_and_treatment": "Making diagnosis and treatment recommendations",
    "clinical_note_taking": "Clinical note-taking",
    "medical_factuality": "Medical factuality",
    "summarization": "Summarization",
    "question_entailment": "Question entailment",
}
CLOSE_ENDED_TASKS = tuple(list(PAPER_TASKS)[:4])
# figure 1's task rows are named "task:<paper task>" in the benchmark column of correlations.parquet
TASK_ROW = "task:"


def task_row(paper_task: str) -> str:
    return f"{TASK_ROW}{paper_task}"


# Table 20's columns: the close-ended metrics of each careval task (the paper reports accuracy; careval's
# classification and relation extraction also write macro-F1 and F1, shown beside it).
CLOSE_ENDED_METRICS = {
    "mcqa": ("acc",),
    "prescription": ("acc",),
    "classification": ("acc", "macro_f1"),
    "extraction": ("f1",),
}
# The families whose metrics fill each kind of table.
KIND_FAMILIES = {
    "perplexity": ("perplexity",),
    "relaxed_perplexity": ("relaxed_perplexity",),
    "prometheus": ("judge",),
    "results": ("rouge", "bleu", "bertscore", "bleurt", "moverscore", "radgraph"),
}


@dataclass(frozen=True)
class PaperTable:
    """One table of Appendix E: its number, file slug, the paper's caption, the paper tasks it covers and the
    kind of its columns. `only`: just these benchmarks (Table 16: CareQA-Open); `exclude`: benchmarks that
    have a table of their own (Table 17 leaves CareQA-Open to Table 16)."""

    number: int
    slug: str
    caption: str
    tasks: tuple[str, ...]
    kind: str  # perplexity | relaxed_perplexity | prometheus | results | close_ended | other (no paper task)
    only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"table{self.number}_{self.slug}"

    def covers(self, benchmark: str, paper_task: str | None) -> bool:
        if self.kind == "other":
            return paper_task is None
        if self.only:
            return benchmark in self.only
        return paper_task in self.tasks and benchmark not in self.exclude


PAPER_TABLES = (
    PaperTable(
        7, "perplexity_open_ended_medical_questions", "Perplexity results for Open-ended Medical Questions.",
        ("open_ended_medical_questions",), "perplexity",
    ),
    PaperTable(
        8, "perplexity_clinical_note_taking_medical_factuality",
        "Perplexity results for clinical note-taking and medical factuality.",
        ("clinical_note_taking", "medical_factuality"), "perplexity",
    ),
    PaperTable(
        9, "perplexity_diagnosis_entailment_summarization",
        "Perplexity results for the following tasks: making diagnosis and treatment recommendation, question "
        "entailment and summarization tasks.",
        ("diagnosis_and_treatment", "question_entailment", "summarization"), "perplexity",
    ),
    PaperTable(
        10, "relaxed_perplexity_medical_factuality", "Relaxed perplexity results for medical factuality.",
        ("medical_factuality",), "relaxed_perplexity",
    ),
    PaperTable(
        11, "prometheus_entailment_open_questions_treatment",
        "Prometheus results for the following tasks: question entailment, open-ended medical questions and "
        "treatment recommendations.",
        ("question_entailment", "open_ended_medical_questions", "diagnosis_and_treatment"), "prometheus",
    ),
    PaperTable(
        12, "prometheus_summarization_clinical_note_taking",
        "Prometheus results for summarization and clinical-note taking tasks.",
        ("summarization", "clinical_note_taking"), "prometheus",
    ),
    PaperTable(13, "clinical_note_taking", "Clinical note-taking results.", ("clinical_note_taking",), "results"),
    PaperTable(
        14, "diagnosis_and_treatment", "Making diagnosis and treatment recommendations results.",
        ("diagnosis_and_treatment",), "results",
    ),
    PaperTable(15, "medical_factuality", "Medical factuality results.", ("medical_factuality",), "results"),
    PaperTable(
        16, "careqa_open", "Results for CareQA-Open.", ("open_ended_medical_questions",), "results",
        only=("careqa_open",),
    ),
    PaperTable(
        17, "open_ended_medical_questions", "Open-ended medical questions results.",
        ("open_ended_medical_questions",), "results", exclude=("careqa_open",),
    ),
    PaperTable(18, "question_entailment", "Question entailment results.", ("question_entailment",), "results"),
    PaperTable(19, "summarization", "Summarization results.", ("summarization",), "results"),
    PaperTable(20, "close_ended", "Close-ended results.", CLOSE_ENDED_TASKS, "close_ended"),
    # not the paper's: the run's benchmarks of no paper task (a config's own, lm-eval tasks), every metric of each
    PaperTable(
        21, "other_benchmarks", "Benchmarks outside the paper's Table 1 (a config's own, lm-eval tasks): every metric.",
        (), "other",
    ),
)  # fmt: skip


@job_spec
class TableSpec(JobSpec):
    """A paper table as this config fills it: the run's benchmarks it covers (catalogue order), and its kind."""

    name: str
    number: int
    caption: str
    kind: str
    benchmarks: tuple[str, ...]
    tasks: dict[str, str]  # benchmark -> careval task (mcqa, open, ...): Table 20's columns


@job_spec
class PaperTablesJob(JobSpec):
    """paper_tables: every planned table, the judge's rubrics (the main one first) and the bootstrap settings.

    bootstrap None: no intervals. mcqa_average: the members of mcqa_weighted_average (None: every mcqa benchmark).
    additions: the tables' benchmarks outside the paper's Table 1 (careval's additions, marked in the files)."""

    tables: tuple[TableSpec, ...]
    rubrics: tuple[str, ...]
    bootstrap: Bootstrap | None
    mcqa_average: tuple[str, ...] | None
    additions: tuple[str, ...] = ()


def _kind_families(table: PaperTable, task: str) -> tuple[str, ...] | None:
    """The families that put a column of `table` on a benchmark of careval task `task` (None: any family)."""
    if table.kind == "other":
        return None
    if table.kind == "close_ended":
        return None if task in CLOSE_ENDED_METRICS else ()
    return KIND_FAMILIES[table.kind] if task == "open" else ()


def planned_tables(
    benchmarks: dict[str, tuple[str, str | None]], families: Callable[[str], Iterable[str]]
) -> tuple[TableSpec, ...]:
    """The tables this run fills: benchmarks maps each run benchmark to (careval task, paper task), in catalogue
    order; families(benchmark) its metric families under the config. A table is planned when at least one of
    its benchmarks is scored with a family of its kind (the demo writes the tables its benchmarks fill)."""
    planned = []
    for table in PAPER_TABLES:
        members = []
        for name, (task, paper_task) in benchmarks.items():
            if not table.covers(name, paper_task):
                continue
            needed = _kind_families(table, task)
            if needed is None or set(needed) & set(families(name)):
                members.append(name)
        if members:
            planned.append(
                TableSpec(
                    name=table.name,
                    number=table.number,
                    caption=table.caption,
                    kind=table.kind,
                    benchmarks=tuple(members),
                    tasks={name: benchmarks[name][0] for name in members},
                )
            )
    return tuple(planned)


def unfilled_tables(
    benchmarks: dict[str, tuple[str, str | None]],
    families: Callable[[str], Iterable[str]],
    why: Callable[[str], str],
) -> tuple[str, ...]:
    """One line per table that a benchmark of the run belongs to but no family of the config fills, saying why it is
    not made (planned_tables' arguments; `why(family)`: the setting that keeps the family off those benchmarks)."""
    notes = []
    for table in PAPER_TABLES:
        members = [name for name, (task, paper_task) in benchmarks.items() if table.covers(name, paper_task)]
        # the families that would put a column in the table, per member (none: its task has no column there)
        wanted = {name: fams for name in members if (fams := _kind_families(table, benchmarks[name][0]))}
        if not wanted or any(set(fams) & set(families(name)) for name, fams in wanted.items()):
            continue
        kinds = sorted({family for fams in wanted.values() for family in fams})
        reasons = sorted({why(family) for family in kinds})
        notes.append(
            f"Table {table.number} ({table.caption.rstrip('.')}) is not made: {', '.join(wanted)} "
            f"{'is' if len(wanted) == 1 else 'are'} scored with none of {', '.join(kinds)} ({'; '.join(reasons)})"
        )
    return tuple(notes)


def table_metric(kind: str, task: str, metric: str) -> bool:
    """Whether `metric` (of a benchmark of careval task `task`) is a column of a table of `kind`."""
    if kind == "close_ended":
        return metric in CLOSE_ENDED_METRICS.get(task, ())
    if JUDGE_SEPARATOR in metric or (metric.startswith(JUDGE_PREFIX) and metric.endswith(JUDGE_EXPECTED_SUFFIX)):
        return False  # one judge of a jury, or the expected grade: the tables show the jury's (or judge's) grade
    if kind == "other":
        return True
    spec = metric_spec(metric)
    if spec.family not in KIND_FAMILIES[kind]:
        return False
    # the paper's own metrics of the family (BERTScore F1, not P and R; not sacreBLEU), or the whole family where
    # the paper names no single metric of it (Prometheus rubrics, Relaxed Perplexity, F1-RadGraph levels)
    named = any(s.paper for s in METRICS.values() if s.family == spec.family)
    return spec.paper or not named


def metric_order(metrics: Iterable[str], rubrics: tuple[str, ...]) -> list[str]:
    """Columns in the paper's order (section 2.2, the registry's), judge rubrics in config order, the rest by name."""
    fixed = list(METRICS)
    judged = [JUDGE_PREFIX + r for r in rubrics]

    def key(metric: str):
        if metric in fixed:
            return (0, fixed.index(metric), metric)
        if metric in judged:
            return (1, judged.index(metric), metric)
        return (2, 0, metric)

    return sorted(set(metrics), key=key)
