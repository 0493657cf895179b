"""careval's additions (benchmarks outside the paper's Table 1): the dagger that marks them wherever the paper's
figures and tables name a benchmark, and the note that says what it means.

Which benchmarks are additions is a fact of the catalogue (Benchmark.paper_dataset None); the plan passes the
run's additions to the jobs that draw or write the paper's pages (ReportJob.additions, PaperTablesJob.additions).
"""

from __future__ import annotations

from collections.abc import Iterable

MARK = "†"
NOTE = f"{MARK} careval's addition, not in the paper's Table 1."


def marked(benchmark: str, additions: Iterable[str]) -> str:
    """The benchmark's name as the paper's pages show it: with the dagger where it is careval's addition."""
    return f"{benchmark}{MARK}" if benchmark in set(additions) else benchmark


def addition_note(shown: Iterable[str], additions: Iterable[str]) -> str:
    """The page's note on the dagger where it shows an addition among `shown` (benchmark names); else ""."""
    return NOTE if set(shown) & set(additions) else ""
