"""Backends by name: each backend module registers itself, and :func:`load_backend` builds one from a model spec.

A model entry's ``backend: <name>`` (an enum of the config schema) is the module ``careval.backends.<name>``,
imported on first use: it calls :func:`register_backend` with the name, its :class:`Capabilities` and a loader
that builds the backend from the typed spec (careval.models.spec.ModelSpec, its defaults the schema's). A module
registers cheaply (no torch, no vLLM at import): the plan reads the capabilities of every model's backend before
any job runs. Adding a backend is its module and its name in the schema's enum (docs/backends.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import Backend, Capabilities


@dataclass(frozen=True)
class Registered:
    name: str
    capabilities: Capabilities  # the most any model of it can do
    load: Callable[[Any], Backend]  # ModelSpec -> Backend
    # ModelSpec -> what this model of it can do, where that depends on the entry (a served model's API): None, the above
    for_spec: Callable[[Any], Capabilities] | None = None


_REGISTRY: dict[str, Registered] = {}


class UnknownBackendError(ValueError):
    one_line = True


def register_backend(
    name: str, capabilities: Capabilities, for_spec: Callable[[Any], Capabilities] | None = None
) -> Callable[[Callable[[Any], Backend]], Any]:
    """Decorator: `load(spec)` (a function or a backend class) builds backend `name` from a ModelSpec; `for_spec(spec)`:
    the capabilities of one model of it where they depend on its entry (at most `capabilities`)."""

    def register(load: Callable[[Any], Backend]) -> Any:
        _REGISTRY[name] = Registered(name, capabilities, load, for_spec)
        return load

    return register


def registered(name: str) -> Registered:
    """The registration of backend `name`, importing its module ``careval.backends.<name>`` on first use."""
    if name not in _REGISTRY:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.{name}":
                raise
        if name not in _REGISTRY:
            raise UnknownBackendError(f"no backend named {name!r} is registered (careval.backends.{name})")
    return _REGISTRY[name]


def capabilities(name: str) -> Capabilities:
    """What backend `name` can do, without loading a model."""
    return registered(name).capabilities


def spec_capabilities(spec: Any) -> Capabilities:
    """What the model of a careval.models.spec.ModelSpec can do (its backend's, or its entry's where they depend on
    it: a served model's API), without loading it: what the plan checks and the jobs read."""
    entry = registered(spec.backend)
    return entry.for_spec(spec) if entry.for_spec is not None else entry.capabilities


def load_backend(spec: Any) -> Backend:
    """The backend of a careval.models.spec.ModelSpec (as a job runs it: ModelSpec.for_job), built by its
    registered loader. (Typed Any: the models package sits beside this one and imports from it.)"""
    return registered(spec.backend).load(spec)
