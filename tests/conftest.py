"""Shared fixtures: the repository root, the real-data samples in ../shared/data, the demo models, and a tiny
random-weight Llama behind the real HF backend (the analysis, reliability and warm-worker tests)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real-data samples not found at {SHARED_DATA} (CI provides ../shared next to the clone)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_config() -> dict:
    from careval.config import load_config

    return load_config(REPO / "config" / "config.yaml")


@pytest.fixture(scope="session")
def demo_model_dirs(demo_config) -> dict[str, Path]:
    """The demo models, prepared once into resources/models (what `snakemake` would do)."""
    from careval.models import needs_preparation, prepare_model

    models_dir = REPO / demo_config["models_dir"]
    dirs = {}
    for name, entry in demo_config["models"].items():
        if needs_preparation(entry):
            prepare_model(name, entry, models_dir / name, models_dir / ".cache")
        dirs[name] = models_dir / name
    return dirs


def _backend_fixtures():
    """tests/backends/conftest.py as a module (its offline tiny-Llama builder)."""
    path = Path(__file__).resolve().parent / "backends" / "conftest.py"
    spec = importlib.util.spec_from_file_location("careval_backend_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A smaller tiny Llama than the backend tests' (hidden 16, one key/value head, 256 positions)."""
    sizes = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1)
    return _backend_fixtures()._build_llama(
        tmp_path_factory.mktemp("tiny-llama-analysis"), **sizes, max_position_embeddings=256
    )


@pytest.fixture(scope="session")
def tiny_spec(tiny_llama_dir) -> dict:
    return {
        "name": "tiny",
        "backend": "hf",
        "path": str(tiny_llama_dir),
        "dtype": "float32",
        "batch_size": 4,
        "device": "cpu",
        "threads": 1,
    }
