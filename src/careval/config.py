"""Load a careval config, fill its defaults and validate it against the JSON schema."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from careval.metrics.registry import FAMILIES
from careval.schema import SCHEMA_PATH, fill_defaults, read_schema, schema_part, with_schema_defaults

__all__ = [
    "ConfigError",
    "describe_error",
    "load_config",
    "load_schema",
    "prepare_config",
    "schema_part",
    "with_schema_defaults",
]


class ConfigError(ValueError):
    """A config that does not match the schema; the message is one line naming the key."""


def load_schema(path: Path | str = SCHEMA_PATH) -> dict:
    """The config schema, with the metric families `metrics.skip` accepts read from the registry."""
    schema = read_schema(path)
    skip = schema.get("properties", {}).get("metrics", {}).get("properties", {}).get("skip")
    if skip is not None:
        skip["items"] = {**skip.get("items", {}), "enum": list(FAMILIES)}
    return schema


def _key_path(error: jsonschema.ValidationError, prefix: str = "") -> str:
    return ".".join([prefix] * bool(prefix) + [str(part) for part in error.absolute_path]) or "<top level>"


def describe_error(error: jsonschema.ValidationError, prefix: str = "") -> str:
    """One schema violation as one line naming its key; `prefix`: where the validated part sits ("benchmarks.x")."""
    where = _key_path(error, prefix)
    if error.validator == "additionalProperties":
        # jsonschema lists unexpected keys in the message; name them with their full path.
        schema: Any = error.schema  # an object schema here (its validator is additionalProperties)
        instance: Any = error.instance
        allowed = set(schema.get("properties", {}))
        unknown = sorted(k for k in instance if k not in allowed)
        above = f"{where}." if error.absolute_path or prefix else ""
        keys = ", ".join(f"'{above}{k}'" for k in unknown)
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
        raise ConfigError(describe_error(errors[0]).replace("\n", " "))


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
    return fill_defaults(config, schema, schema)


def read_config_file(path: Path | str) -> dict:
    """A config file as data, read strictly: YAML keeps the last of two equal keys of a mapping without a word
    (a second `benchmarks:` block silently drops the first), so a duplicated key anywhere is a ConfigError
    naming the file, the line and the key."""
    text = Path(path).read_text()
    check_duplicate_keys(text, str(path))
    return yaml.safe_load(text) or {}


def check_duplicate_keys(text: str, name: str) -> None:
    """Raise ConfigError on the first key (in file order) written twice in one mapping of the YAML `text` (file `name`)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return  # not YAML at all: the loader's own error says where
    duplicates: list[tuple[int, str, int]] = []  # (line, key path, line of its first occurrence)
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while stack:
        node, where = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in node.value:
                path = f"{where}.{key.value}" if where else str(key.value)
                line = key.start_mark.line + 1
                if isinstance(key, yaml.ScalarNode) and key.value in seen and key.value != "<<":
                    duplicates.append((line, path, seen[key.value]))
                seen.setdefault(str(key.value), line)
                stack.append((value, path))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node.value))
    if duplicates:
        line, path, first = min(duplicates)
        raise ConfigError(
            f"{name}:{line}: duplicated key '{path}' (first at line {first}); YAML would keep only the last"
        )


def load_config(path: Path | str) -> dict:
    return prepare_config(read_config_file(path))
