"""One command after a crash: snakemake killed with `kill -9` while scoring, or while drawing the figures (the last
job), and the same command again finishes the run, with the outputs of an uninterrupted run. The lock the killed
run left is released with one line (careval.runlock, the Snakefile); a live run's lock is never touched."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest
from pypdf import PdfReader
from workflow_runs import ENV, SNAKEMAKE, make_workdir, reduced_config, snakemake

pytestmark = pytest.mark.slow

TARGET = "results/correlations.pdf"
MODEL = "smollm2-135m-instruct"
RELEASED = "careval: released the lock of the run that was killed here"


def _config(repo: Path) -> dict:
    config = reduced_config(repo, [MODEL], {"demo_mcqa": {"limit": 2}, "demo_open_qa": {"limit": 2}})
    config["metrics"]["judge"].update(limit=1, repeats_limit=1)
    config["metrics"]["relaxed_perplexity"].update(limit=1, max_tokens=8)
    # no rephrasings or sampled answers: their jobs are more of the job kinds this DAG has (an LLM job, its grades,
    # a scoring job, a table), a third of its time, and it runs twice here (test_rerun_scope.py and test_demo_dag.py
    # run those jobs)
    config["analysis"]["resilience"]["benchmarks"] = []
    config["analysis"]["consistency"]["benchmarks"] = []
    return config


# what two runs of one DAG cannot share: the jobs' wall times (results/benchmarks), and what the cost job draws from
# them (results/summary/cost.parquet's seconds, its figure, the report's cost page); which files each run made
# (results/index.tsv: the resumed run keeps what the killed one finished); and how each run went with the
# request cache: a job killed mid-way reads what it finished back from the cache (its request counts, the tokens it
# computed, the cache's size; the seconds its results needed, as the run that computed each entry timed it)
TIMED_COLUMNS = (
    "wall_seconds",
    "gpu_seconds",
    "cached_requests",
    "computed_requests",
    "prompt_tokens",
    "generated_tokens",
    # what the results needed: the seconds of the calls that computed them, as each run's engine timed them (their
    # tokens, read or computed, are the same in every run, and compared)
    "needed_seconds",
    "needed_gpu_seconds",
)
TIMED_FIGURE = "cost"
# how the run went, not results: the cache's size, and the manifest (its dates; careval.manifest)
RUN_TABLES = ("results/summary/request_cache.parquet", "results/manifest.json")


def _outputs(work: Path) -> dict[str, str]:
    """sha256 of every result, logs and timings aside: the cost table without its seconds, the PDF as the text of
    each page but the cost page (the PDF's bytes hold its creation date and the cost page's plotted seconds)."""
    digests = {}
    for path in sorted((work / "results").rglob("*")):
        relative = str(path.relative_to(work))
        if not path.is_file() or re.match(r"results/(logs/|benchmarks/|index\.tsv$)", relative):
            continue
        if relative == f"results/figures/{TIMED_FIGURE}.png" or relative in RUN_TABLES:
            continue
        if relative == "results/summary/cost.parquet":
            frame = pl.read_parquet(path)
            assert set(TIMED_COLUMNS) <= set(frame.columns)
            data = frame.drop(TIMED_COLUMNS).write_csv().encode()
        elif path.suffix == ".pdf":
            data = "\f".join(_untimed_pages(work, path)).encode()
        else:
            data = path.read_bytes()
        digests[relative] = hashlib.sha256(data).hexdigest()
    return digests


def _untimed_pages(work: Path, pdf: Path) -> list[str]:
    """The text of each page of the report (or of its drawn pages, results/report/pages.pdf) but the cost page (the
    figure index gives the pages' order)."""
    names = pl.read_csv(work / "results" / "figures" / "index.tsv", separator="\t")["name"].to_list()
    pages = list(PdfReader(pdf).pages)
    if pdf.name == "correlations.pdf":  # its first: the manifest's essentials (its dates), not a figure
        pages = pages[1:]
    assert len(pages) == len(names) and TIMED_FIGURE in names
    return [page.extract_text() for name, page in zip(names, pages) if name != TIMED_FIGURE]


@pytest.fixture(scope="module")
def uninterrupted(repo_root, tmp_path_factory, demo_model_dirs):
    config = _config(repo_root)
    work = make_workdir(repo_root, tmp_path_factory.mktemp("whole") / "careval", config)
    result = snakemake(["--cores", "2", TARGET], work, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    return config, _outputs(work), work


def _start(work: Path) -> subprocess.Popen:
    # a session of its own: the kill reaches snakemake alone, as `kill -9 <its pid>` does
    return subprocess.Popen(
        [SNAKEMAKE, "--cores", "2", TARGET],
        cwd=work,
        env={**os.environ, **ENV},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for(process: subprocess.Popen, started: Path) -> None:
    deadline = time.monotonic() + 900
    while not started.exists():
        assert process.poll() is None, "the run ended before the job to kill it in started"
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize(
    "during, started",
    [
        ("scoring", f"results/logs/score_open/{MODEL}/demo_open_qa.log"),
        ("figures", "results/logs/correlations.log"),
    ],
)
def test_after_kill_9_the_same_command_finishes_the_run(repo_root, tmp_path, uninterrupted, during, started):
    config, expected, whole = uninterrupted
    if during == "figures":
        # what a run holds when it is killed drawing the report, its longest job (every other output done but the
        # report, which puts the provenance page in front of the drawn pages): a copy of the finished run without
        # both PDFs (and the drawing's log, whose appearance marks the job's start), so the DAG before it does not
        # run a third time
        work = tmp_path / "careval"
        shutil.copytree(whole, work, symlinks=True)
        for name in (TARGET, "results/report/pages.pdf", started):
            (work / name).unlink()
    else:
        work = make_workdir(repo_root, tmp_path / "careval", config)
    process = _start(work)
    if during == "scoring":
        # while the run lives (here: its inference, a minute before the end), a second one stops at its lock,
        # which stays
        _wait_for(process, work / f"results/logs/infer_open/{MODEL}/demo_open_qa.log")
        second = snakemake(["--cores", "2", TARGET], work, timeout=300)
        assert second.returncode != 0 and process.poll() is None, second.stderr[-3000:]
        assert f"(pid {process.pid}) holds its lock" in second.stderr, second.stderr[-3000:]
        assert any((work / ".snakemake" / "locks").glob("*.lock"))
    _wait_for(process, work / started)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert any((work / ".snakemake" / "locks").glob("*.lock"))  # what `kill -9` leaves

    again = snakemake(["--cores", "2", TARGET], work, timeout=900)
    assert again.returncode == 0, again.stderr[-5000:]
    assert [line for line in again.stderr.splitlines() if line.startswith("careval: ")] == [
        f"{RELEASED} (pid {process.pid} ended without releasing it); going on"
    ]
    assert _outputs(work) == expected
