"""careval's additions (benchmarks outside the paper's Table 1): the dagger that marks them wherever the paper's
figures and tables name a benchmark, and the note that says what it means.

Which benchmarks are additions is a fact of the catalogue (Benchmark.paper_dataset None); the plan passes the
run's additions to the jobs that draw or write the paper's pages (ReportJob.additions, PaperTablesJob.additions).
"""

from __future__ import annotations

from collections.abc import Iterable

MARK = "†"
NOTE = f"{MARK} careval's addition, not in the paper's Table 1."
TASK_ROW_NOTE = f"{MARK} on a task row: its mean takes in careval's addition(s), so it is not the paper's task."


def marked(benchmark: str, additions: Iterable[str]) -> str:
    """The benchmark's name as the paper's pages show it: with the dagger where it is careval's addition."""
    return f"{benchmark}{MARK}" if benchmark in set(additions) else benchmark


def addition_note(shown: Iterable[str], additions: Iterable[str]) -> str:
    """The page's note on the dagger where it shows an addition among `shown` (benchmark names); else ""."""
    return NOTE if set(shown) & set(additions) else ""


def marked_task(label: str, members: Iterable[str], additions: Iterable[str]) -> str:
    """A task row's label (a mean over its benchmarks `members`) with the dagger where one member is an addition."""
    return f"{label}{MARK}" if set(members) & set(additions) else label


def task_addition_note(members: Iterable[str], additions: Iterable[str]) -> str:
    """The note on a task row's dagger where one of the task rows' `members` is an addition; else ""."""
    return TASK_ROW_NOTE if set(members) & set(additions) else ""
