"""mkdocs hook: the configuration reference page (reference/config.md), generated at every build from
workflow/schemas/config.schema.yaml, so the schema's descriptions stay the one place a key is explained.

Every key of the schema becomes one row: its dotted path (`<name>` for a key the user names, `[]` for the items of a
list), type, default, allowed values and description; the `$defs` a key refers to (a model entry, a benchmark, a
study) are tables of their own, linked from the keys that use them. The page is never written to the docs folder.
"""

from __future__ import annotations

import json
from typing import Any

PAGE = "reference/config.md"
CONSTRAINTS = {
    "minimum": ">= {}",
    "exclusiveMinimum": "> {}",
    "maximum": "<= {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matches `{}`",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "minProperties": "at least {} entries",
}


def _def_name(ref: str) -> str:
    return ref.split("/")[-1]


def _anchor(name: str) -> str:
    return f"def-{name.replace('_', '-')}"


def _escape(text: str) -> str:
    """Markdown table cell text: no line breaks, no bare pipes, `<...>` shown as text outside code spans."""
    parts = " ".join(str(text).split()).split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")


def _value(value: Any) -> str:
    return "`" + json.dumps(value, ensure_ascii=False).replace("|", "\\|") + "`"


def type_of(node: dict) -> str:
    """The key's type in words; a `$defs` entry as a link to its table."""
    if "$ref" in node:
        name = _def_name(node["$ref"])
        return f"[{name}](#{_anchor(name)})"
    for combinator in ("oneOf", "anyOf"):
        if combinator in node and any(_typed(alt) for alt in node[combinator]):
            return " or ".join(dict.fromkeys(type_of(alt) for alt in node[combinator] if _typed(alt)))
    if "allOf" in node:
        refs = [type_of(part) for part in node["allOf"] if "$ref" in part]
        if refs:
            return " and ".join(refs) + (" (restricted)" if len(node["allOf"]) > len(refs) else "")
    kinds = node.get("type")
    if kinds is None:
        if "enum" in node:
            kinds = sorted({_json_type(v) for v in node["enum"]})
        elif "const" in node:
            kinds = _json_type(node["const"])
        else:
            return "any"
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    words = []
    for kind in kinds:
        if kind == "array" and isinstance(node.get("items"), dict) and _typed(node["items"]):
            words.append(f"list of {type_of(node['items'])}")
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict) and not node.get("properties"):
            words.append(f"mapping of name to {type_of(node['additionalProperties'])}")
        else:
            words.append(kind)
    return " or ".join(words)


def _typed(node: dict) -> bool:
    return any(key in node for key in ("type", "$ref", "enum", "const", "oneOf", "anyOf", "allOf"))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def allowed(node: dict) -> str:
    """Enumerated values and bounds, as the schema states them."""
    words = []
    if "enum" in node:
        words.append("one of " + ", ".join(_value(v) for v in node["enum"]))
    if "const" in node:
        words.append("exactly " + _value(node["const"]))
    words.extend(template.format(node[key]) for key, template in CONSTRAINTS.items() if key in node)
    if node.get("uniqueItems"):
        words.append("no repeats")
    if isinstance(node.get("items"), dict):
        inner = allowed(node["items"])
        if inner:
            words.append(f"each item: {inner}")
    names = node.get("propertyNames")
    if isinstance(names, dict) and names.get("pattern"):
        words.append(f"names match `{names['pattern']}`")
    for combinator in ("oneOf", "anyOf"):
        for alt in node.get(combinator, []):
            inner = allowed(alt)
            if inner:
                words.append(f"as {type_of(alt)}: {inner}")
    return "; ".join(words)


def _description(node: dict) -> str:
    text = node.get("description", "")
    if not text and "allOf" in node:
        text = next((part.get("description", "") for part in node["allOf"] if part.get("description")), "")
    return text


def rows(node: dict, path: str) -> list[tuple[str, dict]]:
    """(dotted key, its schema) for every key under `node`, depth first, in the schema's order."""
    found: list[tuple[str, dict]] = []
    for key, sub in node.get("properties", {}).items():
        here = f"{path}.{key}" if path else key
        found.append((here, sub))
        found.extend(_nested(sub, here))
    return found


def _nested(sub: dict, here: str) -> list[tuple[str, dict]]:
    """The keys inside one key's value: its own properties, those of every named entry (`<name>`), of every list
    item (`[]`) and of each alternative it may take; a `$defs` entry is a table of its own, not repeated here."""
    if "$ref" in sub:
        return []
    found = rows(sub, here) if "properties" in sub else []
    extra = sub.get("additionalProperties")
    if isinstance(extra, dict):
        found.extend(_nested(extra, f"{here}.<name>"))
    items = sub.get("items")
    if isinstance(items, dict):
        found.extend(_nested(items, f"{here}[]"))
    for combinator in ("oneOf", "anyOf"):
        for alt in sub.get(combinator, []):
            found.extend(_nested(alt, here))
    return found


def table(entries: list[tuple[str, dict]]) -> list[str]:
    lines = ["| key | type | default | allowed values | description |", "|---|---|---|---|---|"]
    for key, node in entries:
        default = _value(node["default"]) if "default" in node else ""
        cells = [f"`{key}`", _escape(type_of(node)), default, _escape(allowed(node)), _escape(_description(node))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def reference(schema: dict) -> str:
    """The whole page as Markdown."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from `workflow/schemas/config.schema.yaml` by the documentation build (never edited by hand): "
        "every key a config may set, with its type, default, allowed values and the schema's description. "
        "A key not listed here is an error (`careval config error: unknown config key ...`). "
        "`<name>` stands for a name you choose (a model, a benchmark, a size class); `[]` for each item of a list.",
        "",
        _escape(schema.get("description", "")),
        "",
        "## Top level",
        "",
        *table(rows(schema, "")),
    ]
    for name, node in schema.get("$defs", {}).items():
        lines += ["", f"## `{name}` {{#{_anchor(name)}}}", ""]
        if _description(node):
            lines += [_escape(_description(node)), ""]
        entries = rows(node, "")
        for part in node.get("allOf", []):
            if "$ref" in part:
                base = _def_name(part["$ref"])
                lines += [f"Every key of [{base}](#{_anchor(base)}), and:", ""]
        lines += table(entries) if entries else [f"Type: {_escape(type_of(node))}. {_escape(allowed(node))}"]
    return "\n".join(lines) + "\n"


def on_files(files, config):
    """Add the generated page to the site (mkdocs calls this before it builds the navigation)."""
    from mkdocs.structure.files import File

    from careval.config import load_schema

    files.append(File.generated(config, PAGE, content=reference(load_schema())))
    return files
