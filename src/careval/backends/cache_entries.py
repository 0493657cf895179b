"""An entry of the request cache as a call writes and reads it (careval.backends.cached): the call's arguments as
JSON (:func:`plain`), a computed entry as a read one would be (:func:`roundtrip`), and the check that a read entry
fits its call (:func:`misfit`: the count and type of values per request; one that does not is a torn entry)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .base import Sampling


def misfit(method: str, args: tuple, entry: Any) -> str | None:
    """What makes a read entry unfit for its call (`method` on `args`), None where it fits: the count and type of
    its values per request, and of its token counts. A misfit is a torn entry (CachedBackend._call)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("usage"), list) or "value" not in entry:
        return "not an entry of the request cache"
    if not all(_is_list(u, _is_int) and len(u) in (2, 3) for u in entry["usage"]):
        return "its token counts are not pairs (or triples) of integers"
    value = entry["value"]
    if method in ("generate", "loglikelihood", "loglikelihood_rolling", "greedy_flags"):
        want, check = len(args[0]), (_is_str if method == "generate" else _is_number)
        kind = "texts" if method == "generate" else "numbers"
    elif method == "sample_continuations":
        want, check, kind = args[1], _is_continuation, "continuations of token ids and a log-probability"
    elif method == "target_logprobs":
        want, check, kind = len(args[3]), _is_prefixed_targets, "lists of (prefix, log-probability, log-probability)"
    else:  # a tokenizer call: one value
        fits = {
            "max_length": _is_int,
            "format": _is_str,
            "encode": lambda v: _is_list(v, _is_int),
            "prompt_tokens": lambda v: _is_list(v, None, 2) and _is_list(v[0], _is_int) and _is_int(v[1]),
        }[method](value)
        return None if fits else f"its value is no answer to {method}"
    if not isinstance(value, list):
        return f"{method} of {want} requests: its value is not a list"
    if len(value) != want:
        return f"{method} of {want} requests: {len(value)} values"
    if len(entry["usage"]) not in (0, want) and method != "sample_continuations":
        return f"{method} of {want} requests: {len(entry['usage'])} token counts"
    wrong = next((i for i, v in enumerate(value) if not check(v)), None)
    if wrong is not None:
        return f"{method} of {want} requests: value {wrong + 1} is not one of {kind}"
    return None


def _is_continuation(value: Any) -> bool:
    return _is_list(value, None, 2) and _is_list(value[0], _is_int) and _is_number(value[1])


def _is_prefixed_targets(value: Any) -> bool:
    return _is_list(value) and all(
        _is_list(r, None, 3) and _is_list(r[0], _is_int) and _is_number(r[1]) and _is_number(r[2]) for r in value
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    # NaN is a value a runtime gives (greedy_flags where it cannot say): a number; a string or null is not
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_list(value: Any, items: Callable[[Any], bool] | None = None, length: int | None = None) -> bool:
    return (
        isinstance(value, list)
        and (length is None or len(value) == length)
        and (items is None or all(items(v) for v in value))
    )


def plain(value: Any) -> Any:
    """The call's arguments as JSON (a Sampling as its fields, tuples as lists)."""
    if isinstance(value, Sampling):
        return {**value.__dict__, "stop": list(value.stop)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def roundtrip(value: Any) -> Any:
    """A computed entry as a read one would be: floats round-trip JSON exactly, tuples become lists."""
    return json.loads(json.dumps(value))
