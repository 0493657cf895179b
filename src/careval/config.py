"""Load a careval config, fill its defaults and validate it against the JSON schema."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from careval.metrics.registry import FAMILIES
from careval.schema import SCHEMA_PATH, fill_defaults, read_schema, schema_part, with_schema_defaults
from careval.textio import TextDecodeError, read_text

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
    if "propertyNames" in error.relative_schema_path:
        # a name that becomes a folder or file name (a model, a benchmark): say which rule, not the whole schema
        name = str(error.instance)
        shown = name if len(name) <= 40 else f"{name[:40]}... ({len(name)} characters)"
        rule = (
            f"is longer than the {error.validator_value} characters a name may have"
            if error.validator == "maxLength"
            else "may hold only letters, digits, '.', '_' and '-', and starts with a letter or digit"
        )
        return f"{where}: the name '{shown}' {rule} (it names folders and files)"
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        # a section that takes exactly one of two keys (metrics.judge: model or models; a CareQA step: model or
        # endpoint): say so, not "is not valid under any of the given schemas" after the whole section
        branches: Any = error.validator_value  # the oneOf's list of schemas
        keys = [branch.get("required", [None])[0] for branch in branches]
        if all(keys):
            given = [key for key in keys if key in error.instance]
            state = f"{' and '.join(given)} are both set" if len(given) > 1 else "none of them is set"
            return f"{where}: set one of {', '.join(keys)} ({state})"
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
    # read again once a plugin has registered a metric family (careval.plugins): `metrics.skip` takes it then
    if _SCHEMA_CACHE.get("families") != tuple(FAMILIES):
        _SCHEMA_CACHE.update(schema=load_schema(), families=tuple(FAMILIES))
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


def config_file_problem(path: Path | str) -> str | None:
    """Why `path` cannot be a config file (None: it can): missing, a folder, not UTF-8, not YAML, empty or no
    mapping of settings. One line naming the file, in place of what Snakemake would print."""
    path = Path(path)
    if not path.exists():
        where = "" if path.is_absolute() else f" (from {Path.cwd()})"
        return f"{path}: no such file{where}"
    if path.is_dir():
        return f"{path}: a folder, not a config file"
    try:
        data = yaml.safe_load(read_text(path))
    except TextDecodeError as error:
        return str(error)
    except OSError as error:
        return f"{path}: cannot read it ({error.strerror})"
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        return f"{path}: not valid YAML" + (f" (line {mark.line + 1})" if mark is not None else "")
    if data is None:
        return f"{path}: the file is empty (a config is a YAML mapping of settings: models, benchmarks, ...)"
    if not isinstance(data, dict):
        return f"{path}: not a YAML mapping of settings (it holds a {type(data).__name__})"
    return None


def command_line_config_files(argv: list[str]) -> list[str]:
    """The files a snakemake command line gives with --configfile/--configfiles (each takes several)."""
    files, taking = [], False
    for token in argv:
        if token.startswith("-"):
            option, _, value = token.partition("=")
            taking = option in ("--configfile", "--configfiles")
            if taking and value:
                files.append(value)
                taking = False
        elif taking:
            files.append(token)
    return files


def stop_on_bad_config_files(argv: list[str] | None = None) -> None:
    """Called by the workflow profile (profiles/default/config.yaml) as Snakemake reads it, before Snakemake loads the
    config files itself: a missing or empty one would be a traceback or a line without the file's name. Here it is
    one careval line, and the command stops."""
    for path in command_line_config_files(sys.argv[1:] if argv is None else argv):
        problem = config_file_problem(path)
        if problem is not None:
            raise SystemExit(f"careval config error: --configfile {problem}")


def load_config(path: Path | str) -> dict:
    return prepare_config(read_config_file(path))
