"""A config's `plugins`: Python modules of the user's own that register kinds careval has no line for (a metric
family in careval.metrics.registry.FAMILIES, a study kind with careval.plan.study_kinds.register_study_kind).

Each entry is a module name (importable where careval is) or a `.py` file (relative to the working directory). The
plan imports them before it reads the config (a study of a plugin's kind is valid then), and names them in the
environment (:data:`ENV`), so every job of the run imports them before its body runs (careval.jobs.run): a job
started in a fresh interpreter, on a cluster node or in a fork of the warm worker sees the same registries.

Standard library only at import (careval.jobs.run imports this in every job).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path

ENV = "CAREVAL_PLUGINS"


class PluginError(ValueError):
    """A plugin that cannot be imported; one line naming the entry."""


def load_plugins(entries: Iterable[str]) -> None:
    """Import each plugin once (a module imported before is not run again), and name them all in :data:`ENV`
    for the jobs this process starts: a file by its absolute path."""
    named = [_import(entry) for entry in entries]
    if named:
        os.environ[ENV] = os.pathsep.join(dict.fromkeys([*_from_environment(), *named]))


def load_environment_plugins() -> None:
    """The plugins the run's plan imported (a job's)."""
    for entry in _from_environment():
        _import(entry)


def _from_environment() -> list[str]:
    return [entry for entry in os.environ.get(ENV, "").split(os.pathsep) if entry]


def _import(entry: str) -> str:
    """Import one plugin; the name a job imports it by (a file: its absolute path)."""
    if not entry.endswith(".py"):
        try:
            importlib.import_module(entry)
        except ImportError as error:
            raise PluginError(f"plugins: '{entry}' cannot be imported: {error}") from error
        return entry
    path = Path(entry).resolve()
    name = path.stem
    if getattr(sys.modules.get(name), "__file__", None) == str(path):
        return str(path)
    if not path.is_file():
        raise PluginError(f"plugins: '{entry}' is no file ({path})")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # registered under its file's name, so a scorer named "<name>:<function>" (a metric family's) imports it
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise PluginError(f"plugins: '{entry}' failed: {type(error).__name__}: {error}") from error
    return str(path)
