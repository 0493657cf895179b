"""Canonical job specs: a frozen spec's identity is the settings that change its job's values, written one way.

Snakemake decides whether a job's params changed by comparing the `repr` of each param with the one it
stored when the job last ran. A spec built on :class:`JobSpec` makes that repr its *identity*: the fields
that change a value, as sorted JSON (mapping keys in one order, a number by its value: YAML's `1` and
`1.0` are one setting). Fields marked :data:`EXECUTION` (threads, batch sizes where they change no value,
devices, timeouts, display names) travel with the spec to the job but are left out of its identity:
changing one replans nothing.

Snakemake records the repr only of params of builtin types (persistence `_serialize_param_builtin`);
any other object is "unrepresentable" and never compared, so a rule passes a spec wrapped in
:class:`JobParam`, a one-element tuple whose repr is the spec's identity.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Mapping
from typing import Any, TypeVar, dataclass_transform

# field(metadata=EXECUTION): the job reads it, but it changes only speed, placement or display, never a value
EXECUTION = {"execution": True}


def canonical(value: Any) -> Any:
    """A JSON-able form of `value` that is the same for equal settings: mappings sorted by key, tuples as
    lists, numbers by value (an integral float as an int), nested specs as their identity."""
    if isinstance(value, JobSpec):
        return value.identity()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise TypeError(f"a job spec holds only plain settings, not {type(value).__name__}: {value!r}")


_Spec = TypeVar("_Spec", bound=type)


# dataclass_transform: a type checker reads a @job_spec class's fields as a frozen dataclass's __init__
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def job_spec(cls: _Spec) -> _Spec:
    """Make `cls` (a JobSpec subclass) a frozen dataclass that keeps JobSpec's repr (its identity)."""
    return dataclasses.dataclass(frozen=True, repr=False)(cls)


class JobSpec:
    """Base of the frozen dataclasses a rule passes to its job (`params: job=JobParam(spec)`); declare one
    with @job_spec. repr() is the identity; ``identity()`` leaves out EXECUTION fields."""

    def identity(self) -> dict[str, Any]:
        return {
            field.name: canonical(getattr(self, field.name))
            for field in dataclasses.fields(self)  # type: ignore[arg-type]
            if not field.metadata.get("execution")
        }

    def __repr__(self) -> str:
        # a frozen spec's identity never changes: written once (the plan hands one spec to many callers, and the
        # studies compare specs by their identity many times over)
        known = self.__dict__.get("_identity")
        if known is None:
            known = f"{type(self).__name__}{json.dumps(self.identity(), sort_keys=True, separators=(',', ':'))}"
            object.__setattr__(self, "_identity", known)
        return known

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the identity written so far (a pickle holds the fields only)."""
        return {key: value for key, value in self.__dict__.items() if key != "_identity"}

    def loaded_model(self) -> Any:
        """The model the job loads (evaluated, judge, rephraser, CareQA step: a field with `preload_facts`,
        careval.models.spec.ModelSpec), or None."""
        values = (getattr(self, field.name) for field in dataclasses.fields(self))  # type: ignore[arg-type]
        return next((value for value in values if hasattr(value, "preload_facts")), None)


class JobParam(tuple):
    """A job's spec as a Snakemake param: a tuple (so Snakemake records and compares it) whose repr is the spec's.

    Pickled (into the job's script, or to the warm worker), it travels as the spec's own pickle, unpickled on first
    use of `.spec`: the warm worker reads a request without importing the spec's modules (careval.specs imports
    the benchmark catalogue, and so polars, whose threads a fork would lose), and preloads the model the job
    loads from `preload`, the plain facts of it (ModelSpec.preload_facts).
    """

    preload: dict[str, Any] | None

    def __new__(cls, spec: JobSpec) -> JobParam:
        param = super().__new__(cls, (spec,))
        model = spec.loaded_model()
        param.preload = None if model is None else model.preload_facts()
        return param

    def __reduce__(self) -> tuple:
        return (_unpickled_param, (pickle.dumps(self.spec), self.preload))

    @property
    def spec(self) -> Any:
        if isinstance(self[0], bytes):
            if "_spec" not in self.__dict__:
                self.__dict__["_spec"] = pickle.loads(self[0])
            return self.__dict__["_spec"]
        return self[0]

    def __repr__(self) -> str:
        return repr(self.spec)


def _unpickled_param(spec: bytes, preload: dict[str, Any] | None) -> JobParam:
    param = tuple.__new__(JobParam, (spec,))
    param.preload = preload
    return param


def job_of(snakemake: Any) -> Any:
    """In a rule's script: the job's spec (`params.job`), the one thing the job reads of the config."""
    return snakemake.params.job.spec
