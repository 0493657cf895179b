"""The typed model spec (careval.models.spec.ModelSpec) of a local model folder, as the tests build backends from it."""

from __future__ import annotations

from pathlib import Path


def local_model_spec(name: str, folder: Path | str, cache_dir: Path | str | None = None, **entry):
    """The spec a config entry `{source: local:<folder>, **entry}` gives (the schema's defaults for the rest), as its
    job runs it (ModelSpec.for_job). Without `threads` in `entry`, the backend keeps this process's torch threads;
    without `cache_dir`, its jobs cache nothing (resources.cache: false)."""
    import torch

    from careval.models.spec import model_spec

    entry.setdefault("threads", torch.get_num_threads())
    resources = {"cache": True, "cache_dir": str(cache_dir)} if cache_dir else {"cache": False}
    spec = model_spec(name, {"source": f"local:{folder}", **entry}, models_dir=Path(folder).parent, resources=resources)
    return spec.for_job()
