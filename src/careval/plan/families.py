"""Which metric families each benchmark is scored with, and by which kind of job: the families' registry entries
(careval.metrics.registry) read for one benchmark under a config's `metrics.skip` and `metrics.<family>.benchmarks`."""

from __future__ import annotations

from careval.datasets.benchmark import Benchmark
from careval.metrics.registry import FAMILIES, TASK_FAMILIES

# The families computed by a job that loads an LLM, each by its own rule (the judge, Relaxed Perplexity).
LLM_FAMILIES = tuple(name for name, family in FAMILIES.items() if family.job == "llm")
# Families only some benchmarks carry (an entry's extra_metrics), each by its own rule (F1-RadGraph).
EXTRA_FAMILIES = tuple(name for name, family in FAMILIES.items() if family.job == "extra")


# The scoring jobs of lm-eval tasks (rules score_lm_eval, score_lm_eval_open): lm-eval's own metrics, and on a task
# that generates, careval's families of open-ended answers too.
LM_EVAL_SCORING = {"lm_eval": ("lm_eval",), "lm_eval_open": ("lm_eval", *TASK_FAMILIES["open"])}


def task_families(entry: Benchmark) -> tuple[str, ...]:
    """The families of a benchmark's task (an lm-eval task's: LM_EVAL_SCORING)."""
    if entry.lm_eval is not None:
        return LM_EVAL_SCORING["lm_eval_open" if entry.generates else "lm_eval"]
    return TASK_FAMILIES[entry.task]


def benchmark_families(entry: Benchmark) -> tuple[str, ...]:
    """Every family a benchmark can be scored with: its task's and its extra ones."""
    return task_families(entry) + entry.extra_metrics


def scored_families(
    entry: Benchmark, benchmark: str, skipped: frozenset[str], only: dict[str, tuple[str, ...] | None]
) -> list[str]:
    """The families a benchmark is scored with: its own, less those skipped (metrics.skip) and the LLM families
    limited to other benchmarks (metrics.<family>.benchmarks, `only`)."""
    return [
        family
        for family in benchmark_families(entry)
        if family not in skipped and ((allowed := only.get(family)) is None or benchmark in allowed)
    ]
