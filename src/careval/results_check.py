"""What lies under the results folder when a run starts: files cut short, intermediates deleted since they were read,
and files no job of the config makes; and the index a run leaves of its files (results/index.tsv).

Snakemake plans from modification times: a job whose outputs exist is left alone, so a parquet file cut short (a
full disk, a copy interrupted) is read by the next job, and an intermediate deleted after a finished run is never
made again ("Nothing to be done"). The workflow (workflow/rules/common.smk) asks these functions what to remake
and forces exactly those files' jobs; it also marks the files an earlier config left behind. The library side
knows files and records only: what Snakemake recorded is passed in as a function.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

# Parquet's magic bytes: a whole file starts with them and ends with them, after its footer and the footer's length.
PARQUET_MAGIC = b"PAR1"
# folders and files of a results folder that no job of a config makes and nothing reads as a result: the jobs' logs
# (and the warm worker's), the index itself and Snakemake's report (`snakemake --report results/report.html`)
NOT_RESULTS = ("logs",)
INDEX = "index.tsv"
REPORTS = ("report.html", "report.zip")


def parquet_problem(path: Path | str) -> str | None:
    """Why `path` is not a whole parquet file (None: its header, footer and footer length are in place).

    Reads 12 bytes at most: the check every run makes of every parquet file costs no more than a listing."""
    path = Path(path)
    size = path.stat().st_size
    if size < 12:
        return f"{size} bytes, too short for a parquet file"
    with open(path, "rb") as handle:
        head = handle.read(4)
        handle.seek(size - 8)
        tail = handle.read(8)
    if head != PARQUET_MAGIC:
        return "not a parquet file (no PAR1 at its start)"
    if tail[4:] != PARQUET_MAGIC:
        return "cut short (no PAR1 at its end)"
    if int.from_bytes(tail[:4], "little") > size - 12:
        return "cut short (its footer is longer than the file)"
    return None


def result_files(root: Path | str) -> list[str]:
    """Every file under `root` that a job may have made, as paths joined to `root` as given (the way Snakemake
    names them), sorted; without the logs, the index and the report."""
    root = Path(root)
    found = []
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        folders[:] = sorted(name for name in folders if not (here == root and name in NOT_RESULTS))
        found += [str(here / name) for name in files if not (here == root and name in (INDEX, *REPORTS))]
    return sorted(found)


def json_problem(path: Path | str) -> str | None:
    """Why `path` is not a whole JSON document (a normalisation report, the CareQA build's counts), or None."""
    try:
        json.loads(Path(path).read_bytes())
    except (ValueError, UnicodeDecodeError) as error:
        return f"not whole JSON ({str(error).split(':')[0]})"
    return None


def cut_short(files: Iterable[str]) -> dict[str, str]:
    """The parquet and JSON files of `files` that are not whole (the intermediates jobs read): path -> why."""
    checks = {".parquet": parquet_problem, ".json": json_problem}
    problems = {path: checks[suffix](path) for path in files if (suffix := Path(path).suffix) in checks}
    return {path: why for path, why in problems.items() if why is not None}


def deleted_inputs(files: Iterable[str], recorded_inputs: Callable[[str], Iterable[str] | None]) -> dict[str, str]:
    """The inputs a job read to make one of `files` (as Snakemake recorded them: `recorded_inputs`) that are gone
    now, each with the file it was read for: missing path -> that file. Inputs outside the folders of `files` (a
    dataset, a model) are the caller's to filter."""
    deleted: dict[str, str] = {}
    for path in files:
        for source in recorded_inputs(path) or ():
            if source not in deleted and not os.path.exists(source):
                deleted[source] = path
    return deleted


def job_digest(spec: object) -> str:
    """A job spec's identity (its repr: careval.canonical.JobSpec) as a short digest: what a normalised dataset's
    report records as `made_by`, so a dataset kept while Snakemake's records were deleted (`rm -rf .snakemake`: the
    datasets folder lies outside results/) is still known to have been made under other settings."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:16]


def outdated_datasets(planned: Mapping[str, str]) -> dict[str, str]:
    """Of the datasets a run plans (their report's path -> the digest of the job that makes them now), those whose
    report names another job (`made_by`): report path -> the digest it names. A report without one (made before
    careval recorded it) or missing is left to Snakemake's own records."""
    outdated = {}
    for path, digest in planned.items():
        try:
            made_by = json.loads(Path(path).read_text(encoding="utf-8")).get("made_by")
        except (OSError, ValueError, AttributeError):
            continue
        if made_by is not None and made_by != digest:
            outdated[path] = made_by
    return outdated


def index_rows(made: Iterable[str], kept: Iterable[str], stale: Iterable[str]) -> list[tuple[str, str]]:
    """(path, status) of every file a run leaves: made by this run, kept (made earlier, up to date for this config)
    or stale (no job of this config makes it: left by an earlier config), sorted by path."""
    rows = dict.fromkeys(kept, "kept")
    rows.update(dict.fromkeys(made, "made"))
    rows.update({path: "stale" for path in stale if path not in rows})
    return sorted(rows.items())


def write_index(path: Path | str, rows: list[tuple[str, str]]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["path\tstatus", *(f"{file}\t{status}" for file, status in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def stale_summary(stale: list[str], shown: int = 3) -> str:
    """One line naming the first few stale files and how many there are."""
    names = ", ".join(stale[:shown]) + (f" and {len(stale) - shown} more" if len(stale) > shown else "")
    return (
        f"{len(stale)} file(s) under the results folder are not made by this config (left by an earlier one): {names}"
    )
