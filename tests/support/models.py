"""The demo models, prepared for the tests as the pipeline prepares them, one process at a time.

pytest-xdist runs tests in several processes, each with its own session fixtures; on a fresh clone two of them
could download and convert the same model into resources/models at once. A lock file outside the models
folder (it may be read-only) serialises preparation: the second process waits, then finds the folder up to date.
`python -m support.models` (from tests/) prepares the demo's models ahead, as .ci/run does while the type check runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def preparation_lock(models_dir: Path) -> Iterator[None]:
    key = hashlib.sha256(str(models_dir.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"careval-tests-prepare-{key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare(name: str, entry: dict, dest: Path, cache: Path) -> Path:
    """careval.models.prepare_model under the lock of `cache`'s models folder (idempotent: at once if prepared)."""
    from careval.models import prepare_model

    with preparation_lock(cache.parent):
        return prepare_model(name, entry, dest, cache)


def prepare_demo_models(repo: Path, config: dict) -> dict[str, Path]:
    """Every model of the demo's config (`config`), prepared into its models_dir as `snakemake` would: name -> folder."""
    from careval.models import needs_preparation

    models_dir = repo / config["models_dir"]
    dirs = {}
    for name, entry in config["models"].items():
        if needs_preparation(entry):
            prepare(name, entry, models_dir / name, models_dir / ".cache")
        dirs[name] = models_dir / name
    return dirs


if __name__ == "__main__":
    from careval.config import load_config

    REPO = Path(__file__).resolve().parents[2]
    for name, folder in prepare_demo_models(REPO, load_config(REPO / "config" / "config.yaml")).items():
        print(f"prepared {name}: {folder}")
