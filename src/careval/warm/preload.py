"""What the warm worker loads before it forks jobs: the slow imports of the run's jobs, and each job's hf model.

The imports are those the jobs a run will run need (:func:`warm_modules`, from their specs, when the run starts):
the LLM libraries where a job loads a model, the libraries of the metric families the scoring jobs compute
(careval.metrics.registry `imports`), the analysis libraries where a job tests or draws; nothing for the rest.

Only libraries whose import starts no thread: a fork keeps just the thread that forked, so a pool thread
the worker started would be missing (or hold a lock forever) in every job. polars starts threads at import
(its allocator's and an out-of-core cleaner), and nearly every careval module imports polars, so the jobs
import careval and polars themselves (a few tenths of a second); pyarrow (through pandas) starts its
allocator's background thread unless JE_ARROW_MALLOC_CONF says not to (server.SINGLE_THREADED). The
worker's log lists, per job, the packages the job still imported itself (server.py), and the thread count
after warming up, which tests/warm/test_warm_worker.py holds at one.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# The slow imports of a job that loads an LLM, and of one that tests or draws.
LLM_MODULES = (
    "torch",
    "transformers",
    "careval.backends.hf.backend",  # transformers' auto classes, the hf backend (every LLM job)
    "careval.metrics.judge_distribution",
    "prometheus_eval.prompts",
    "prometheus_eval.parser",  # fastchat
)
ANALYSIS_MODULES = ("scipy.stats", "matplotlib.pyplot", "matplotlib.backends.backend_pdf")


def warm_modules(specs: Iterable[Any] | None = None) -> tuple[str, ...]:
    """The slow imports the jobs of a run need, in the order its jobs first need them: `specs` are the job specs
    (careval.canonical.JobSpec) of the jobs it will run; None: every job's (a worker started outside a run)."""
    from careval.metrics.registry import FAMILIES

    llm = analysis = specs is None
    families = set(FAMILIES) if specs is None else set()
    for spec in specs or ():
        if spec.loaded_model() is not None:
            llm = True
        elif hasattr(spec, "families"):  # a scoring job (careval.specs.ScoreJob)
            families.update(family.name for family in spec.families)
        elif type(spec).__name__ != "NormaliseJob":  # a table, a test, a figure
            analysis = True
    imports = [name for family in FAMILIES if family in families for name in FAMILIES[family].imports]
    modules = (LLM_MODULES if llm else ()) + tuple(imports) + (ANALYSIS_MODULES if analysis else ())
    return tuple(dict.fromkeys(modules))


def import_module(name: str) -> str | None:
    """Import one of the modules a run's jobs need; the error where it failed (a job that needs it then fails on
    its own)."""
    try:
        importlib.import_module(name)
    except Exception as error:  # e.g. an optional extra not installed
        return f"{name}: {type(error).__name__}: {error}"
    return None


class ModelShelf:
    """The hf models the worker keeps loaded, least recently used dropped first, within a size budget
    (resources.warm_worker_model_mb): a local run over many large CPU models must not hold them all."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.kept: OrderedDict[tuple[str, str], int] = OrderedDict()  # (folder, dtype) -> estimated bytes

    def load_for(self, snakemake: Any) -> str | None:
        """Load the hf model a job's spec (`params.job`) loads, as the job will load it (on the CPU, in the dtype
        the job resolves); a description of what was done, or None where the job loads no local hf model."""
        from transformers.utils import logging as transformers_logging

        from careval.backends.dtype import resolve_dtype
        from careval.backends.hf.loading import drop_preloaded, preload

        # the facts of the job's model, read without unpickling its spec (careval.canonical.JobParam)
        facts = getattr(getattr(snakemake.params, "job", None), "preload", None)
        if not facts or facts["backend"] != "hf":
            return None
        job = SimpleNamespace(name=facts["name"], path=facts["path"], dtype=resolve_dtype(facts["dtype"]))
        if not os.path.isdir(job.path):
            return None
        key, size = (os.path.realpath(job.path), job.dtype), weights_bytes(job.path, job.dtype)
        described = f"{job.name} ({job.path}, {job.dtype}, about {size / 2**20:.0f} MB)"
        if size > self.budget:
            return f"{described} not kept: over the budget of {self.budget / 2**20:.0f} MB (the job loads it)"
        self.kept.pop(key, None)
        while self.kept and sum(self.kept.values()) + size > self.budget:
            (folder, dtype), _ = self.kept.popitem(last=False)
            drop_preloaded(folder, dtype)
        # no progress bar: tqdm's first bar starts its monitor thread, which no fork would have
        bars = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()
        try:
            preload(job.path, job.dtype)
        finally:
            if bars:
                transformers_logging.enable_progress_bar()
        join_pool_threads()
        self.kept[key] = size
        return f"{described} ready"


def join_pool_threads(timeout: float = 30.0) -> None:
    """Wait for the threads of thread pools shut down without waiting: transformers loads weights in a pool it
    ends with `shutdown(wait=False)` (core_model_loading.py), so its threads still exist for moments after the
    load, and a job forked then would copy a process with threads it cannot have. `join` returns once a thread's
    Python state is gone, a moment before the kernel ends the thread (still in /proc/self/task right after `join`
    in 30 of 2,000 pools here, 500 of 2,000 on a busy machine), so each is waited for until the kernel has ended it
    too."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and thread.name.startswith("ThreadPoolExecutor"):
            thread.join(timeout)
            task = f"/proc/self/task/{thread.native_id}"
            ends = time.monotonic() + 1.0
            while not thread.is_alive() and os.path.exists(task) and time.monotonic() < ends:
                time.sleep(0.001)


def weights_bytes(folder: str, dtype: str) -> int:
    """The memory a folder's weights take in `dtype`: the tensors of its weight files (a safetensors file less
    its header; a pickled one whole), scaled from the dtype the folder's config says they are stored in."""
    stored = 0
    for entry in os.scandir(folder):
        if entry.name.endswith(".safetensors"):
            with open(entry.path, "rb") as handle:  # 8 bytes of header length, the JSON header, the tensors
                stored += entry.stat().st_size - 8 - int.from_bytes(handle.read(8), "little")
        elif entry.name.endswith((".bin", ".pt")):
            stored += entry.stat().st_size
    config = Path(folder) / "config.json"
    written = json.loads(config.read_text()) if config.exists() else {}
    stored_as = BYTES.get(str(written.get("dtype") or written.get("torch_dtype") or "float32"), 4)
    return stored * BYTES.get(dtype, stored_as) // stored_as  # "auto": as stored


BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}
