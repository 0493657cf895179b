"""Shared fixtures: the repository root, the real-data samples in ../shared/data, the demo models."""

from __future__ import annotations

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
