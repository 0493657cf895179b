"""The config schema file as data: where it is, and the defaults it holds (their one home).

A layer-0 module that imports no other careval module, so the backends and metrics can fill a partial
setting from the schema without importing the config module (which reads the metric registry).
Validation lives in careval.config.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def read_schema(path: Path | str = SCHEMA_PATH) -> dict:
    """The schema file as written (careval.config.load_schema adds what the registry knows); libyaml's loader where
    PyYAML has it (a tenth of a second at each plan, twice)."""
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


_RAW: dict = {}


def _raw_schema() -> dict:
    if "schema" not in _RAW:
        _RAW["schema"] = read_schema()
    return _RAW["schema"]


def fill_defaults(node: Any, schema: dict, root: dict) -> Any:
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    if isinstance(node, dict):
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key not in node and "default" in sub:
                node[key] = copy.deepcopy(sub["default"])
        for key, value in node.items():
            sub = props.get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                node[key] = fill_defaults(value, sub, root)
    return node


def with_schema_defaults(node: dict | None, where: str, schema: dict | None = None) -> dict:
    """A copy of `node` with the defaults of one part of the schema filled in: a `$defs` entry
    (e.g. "model") or a top-level key (e.g. "resources"). For entries the whole-config pass cannot
    reach (an inline judge or rephraser model sits under a oneOf) and for library callers; a dotted path
    ("metrics.judge") names a nested section."""
    schema = schema or _raw_schema()
    return fill_defaults(copy.deepcopy(node or {}), schema_part(where, schema), schema)


def schema_part(where: str, schema: dict | None = None) -> dict:
    """One part of the schema: a `$defs` entry ("model") or a dotted path of properties ("metrics.judge")."""
    schema = schema or _raw_schema()
    if where in schema["$defs"]:
        return schema["$defs"][where]
    part = schema
    for key in where.split("."):
        part = part["properties"][key]
    return part
