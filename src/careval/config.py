"""Load a careval config, fill its defaults and validate it against the JSON schema."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A config that does not match the schema; the message is one line naming the key."""


def load_schema(path: Path | str = SCHEMA_PATH) -> dict:
    with open(path) as handle:
        return yaml.safe_load(handle)


def _key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    where = _key_path(error)
    if error.validator == "additionalProperties":
        # jsonschema lists unexpected keys in the message; name them with their full path.
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in allowed)
        prefix = f"{where}." if error.absolute_path else ""
        keys = ", ".join(f"'{prefix}{k}'" for k in unknown)
        hint = f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""
        return f"unknown config key {keys}{hint}"
    if error.validator == "required":
        return f"missing config key under '{where}': {error.message}"
    return f"bad value for config key '{where}': {error.message}"


def validate_config(config: dict, schema: dict | None = None) -> None:
    """Raise ConfigError (one line, naming the key) on the first schema violation."""
    schema = schema or _default_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), e.path))
    if errors:
        raise ConfigError(_describe(errors[0]).replace("\n", " "))


def _fill_defaults(node: Any, schema: dict, root: dict) -> Any:
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
                node[key] = _fill_defaults(value, sub, root)
    return node


def with_schema_defaults(node: dict | None, where: str, schema: dict | None = None) -> dict:
    """A copy of `node` with the defaults of one part of the schema filled in: a `$defs` entry
    (e.g. "model") or a top-level key (e.g. "resources"). For entries the whole-config pass cannot
    reach (an inline judge or rephraser model sits under a oneOf) and for library callers."""
    schema = schema or _default_schema()
    part = schema["$defs"].get(where) or schema["properties"][where]
    return _fill_defaults(copy.deepcopy(node or {}), part, schema)


_SCHEMA_CACHE: dict = {}


def _default_schema() -> dict:
    if "schema" not in _SCHEMA_CACHE:
        _SCHEMA_CACHE["schema"] = load_schema()
    return _SCHEMA_CACHE["schema"]


def prepare_config(config: dict, schema: dict | None = None) -> dict:
    """Validate, then return a copy with the schema's defaults filled in (null benchmark entries become {})."""
    schema = schema or _default_schema()
    validate_config(config, schema)
    config = copy.deepcopy(config)
    config["benchmarks"] = {name: (entry or {}) for name, entry in config["benchmarks"].items()}
    return _fill_defaults(config, schema, schema)


def load_config(path: Path | str) -> dict:
    with open(path) as handle:
        return prepare_config(yaml.safe_load(handle) or {})
