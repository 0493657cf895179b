"""Every input file a config names, found and read before any job runs: people's ratings, the CareQA review sheets,
the CareQA statistics' own files and the benchmarks' local files (the Elo CSV is read by the plan).

Each file is read by the reader its job uses, so a bad row is the same one line here as in the job (file, line,
field and rule), only before any model has run. A path the config gives relative is looked for in the working
directory, then in the repository (where the demo's files ship): a file in neither is named as the config wrote it.
A catalogue benchmark's own local file not there yet (credentialed MIMIC-III, Kaggle's MTSamples) is left to its job,
whose line says how to get it, so the rest of a study still runs; a path the config wrote (a benchmark of its own, or a
catalogue entry's `path:` override) must be there and readable now. So must the request cache's folder be a folder,
or one that can be made.
"""

from __future__ import annotations

import os
from pathlib import Path

from careval.careqa.review import SheetError, read_sheets
from careval.careqa.statistics import filled_sheets
from careval.config import ConfigError
from careval.datasets.benchmark import REPO_ROOT, LocalSource
from careval.datasets.loaders import SourceError, read_source
from careval.datasets.normalise import SampleError, normalise_report
from careval.models.spec import cache_dir


def resolve_input(given: str, key: str) -> Path:
    """The file `key` names: as given when absolute or found from the working directory, else the repository's."""
    path = Path(given)
    if path.is_absolute() or path.exists():
        found = path
    else:
        found = REPO_ROOT / path
    if not found.exists():
        looked = "" if path.is_absolute() else f" (looked in {Path.cwd()} and in {REPO_ROOT})"
        raise ConfigError(f"{key}: '{given}' does not exist{looked}")
    return found


def local_sample_ids(plan) -> dict[str, set[str]]:
    """Each benchmark whose source is a local file that exists, read and normalised as its job does (its limit and
    overrides), so a bad row stops the run here: benchmark -> its sample ids."""
    ids = {}
    for name, entry in plan.benchmarks.items():
        source = entry.source
        if not isinstance(source, LocalSource) or not Path(source.path).exists():
            continue
        try:
            samples = normalise_report(read_source(source), entry, plan.limits[name]).samples
        except SourceError as error:
            raise ConfigError(f"benchmarks.{name}: {name}: {error}") from None
        except SampleError as error:
            raise ConfigError(f"benchmarks.{name}: {error}") from None
        ids[name] = set(samples["id"].to_list())
    return ids


def check_human_ratings(plan, sample_ids: dict[str, set[str]]) -> None:
    """analysis.human_ratings, every row (models, benchmarks, ratings in range, conflicting duplicates), and each
    sample id where its benchmark's samples are known here (a hub benchmark's ids are checked by the jury report)."""
    given = plan.config["analysis"]["human_ratings"]
    if given is None:
        return
    # here, not at the top: the ratings' reader pulls in scipy, scikit-learn and pandas, which the Snakefile's process
    # (this module checks the inputs at plan time) needs only when a config has ratings
    from careval.analysis.jury.human_ratings import HumanRatingsError, read_human_ratings

    path = resolve_input(given, "analysis.human_ratings")
    known = {benchmark: sample_ids.get(benchmark) for benchmark in plan.benchmarks}
    try:
        read_human_ratings(path, sorted(plan.models), known, tuple(plan.config["analysis"]["human_rating_range"]))
    except HumanRatingsError as error:
        raise ConfigError(f"analysis.human_ratings: {error}") from None


def check_careqa_files(config: dict) -> None:
    """The CareQA review sheets (each kind's sheets read together, as the agreement job reads them) and the statistics'
    own files. (The editions' local booklets and keys are inputs of the build's first rule: Snakemake names a missing
    one when `snakemake careqa` plans.)"""
    careqa = config["careqa"]
    for kind, paths in filled_sheets(careqa["review"]["filled_sheets"]).items():
        try:
            read_sheets(paths)
        except SheetError as error:
            raise ConfigError(f"careqa.review.filled_sheets ({kind}): {error}") from None
    benchmarks = set(config["benchmarks"])
    for kind in ("closed", "open"):
        value = careqa["statistics"].get(kind)
        if value is not None and value not in benchmarks:
            resolve_input(value, f"careqa.statistics.{kind}")


def check_benchmark_paths(plan) -> None:
    """Every local file a benchmark entry of the config names (`path`), there and readable: the job would die on it."""
    for name, entry in plan.benchmarks.items():
        given = (plan.config["benchmarks"].get(name) or {}).get("path")
        source = entry.source
        if given is None or not isinstance(source, LocalSource):
            continue
        path = Path(source.path)
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise ConfigError(f"benchmarks.{name}.path: '{given}' {what} (looked in {Path.cwd()})")
        if not os.access(path, os.R_OK):
            raise ConfigError(f"benchmarks.{name}.path: '{given}' cannot be read (permission denied)")


def check_cache_dir(config: dict) -> None:
    """resources.cache_dir (where the cache is on): a folder, or a path where one can be made."""
    given = cache_dir(config["resources"])
    if given is None:
        return
    folder = Path(given)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"resources.cache_dir: '{folder}' is a file, not a folder (the request cache's)")
    parent = folder
    while not parent.exists():
        parent = parent.parent
    if parent != folder and not (parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)):
        why = "is not a folder" if not parent.is_dir() else "cannot be written"
        raise ConfigError(f"resources.cache_dir: '{folder}' cannot be made: {parent} {why}")


def check_input_files(plan) -> None:
    """Every input file the plan's config names, before any job: a ConfigError naming the key, file, line and rule."""
    check_cache_dir(plan.config)
    check_benchmark_paths(plan)
    check_careqa_files(plan.config)
    check_human_ratings(plan, local_sample_ids(plan))
