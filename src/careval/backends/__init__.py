"""Model runtimes behind one interface (base.Backend); build one from a model spec with :func:`load_backend`.

Importing this package is cheap: a backend's module registers it by name (registry.py) and loads its
runtime (torch and transformers for hf, vLLM for vllm, the optional ``gpu`` extra) only to build one.
"""

from __future__ import annotations

from .base import Backend, Capabilities, CapabilityError, Continuation, PrefixedTarget, Sampling
from .registry import capabilities, load_backend, register_backend

__all__ = [
    "Backend",
    "Capabilities",
    "CapabilityError",
    "Continuation",
    "PrefixedTarget",
    "Sampling",
    "capabilities",
    "load_backend",
    "register_backend",
]
