"""The benchmark registry: one declarative entry per benchmark (source, field mapping, task, prompt, metrics)."""

from __future__ import annotations

from dataclasses import replace

from careval.datasets.benchmark import CHOICE_TASKS, MCQA_STYLES, Benchmark, LocalSource
from careval.datasets.catalogue import CATALOGUE
from careval.tasks.prompts import check_prompt

REGISTRY: dict[str, Benchmark] = {entry.name: entry for entry in CATALOGUE}


class UnknownBenchmarkError(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def get_benchmark(name: str, overrides: dict | None = None) -> Benchmark:
    """The registry entry, with a config's overrides (format, path, prompt, mode, ...) applied."""
    if name not in REGISTRY:
        raise UnknownBenchmarkError(f"unknown benchmark '{name}' in config: known are {', '.join(sorted(REGISTRY))}")
    entry = REGISTRY[name]
    overrides = overrides or {}
    if overrides.get("format"):
        if overrides["format"] not in entry.formats:
            known = ", ".join(sorted(entry.formats)) or "none"
            raise UnknownBenchmarkError(f"benchmark '{name}': unknown format '{overrides['format']}' (known: {known})")
        entry = replace(entry, **entry.formats[overrides["format"]])
    if overrides.get("path"):
        entry = replace(entry, source=LocalSource(overrides["path"]))
    if overrides.get("mcqa_style"):
        entry = _with_style(entry, overrides["mcqa_style"], name)
    for key in ("prompt", "max_new_tokens", "mode", "on_bad_row", "select"):
        if overrides.get(key):
            entry = replace(entry, **{key: overrides[key]})
    if overrides.get("fraction") is not None:
        entry = replace(entry, fraction=_fraction(overrides["fraction"], f"benchmarks.{name}.fraction"))
    if overrides.get("stop") is not None:  # [] is a setting too: no stop string
        entry = replace(entry, stop=tuple(overrides["stop"]))
    # checked here, where the config is read, not by a KeyError inside inference after the model loads
    key = f"benchmarks.{name}.prompt" if overrides.get("prompt") else f"the catalogue's prompt of '{name}'"
    check_prompt(
        entry.prompt,
        entry.task,
        has_context="context" in entry.fields,
        has_options=entry.task in CHOICE_TASKS,
        key=key,
        mcqa_style=entry.mcqa_style,
    )
    return entry


def _fraction(value, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise UnknownBenchmarkError(f"{key}: {value!r} is not a fraction of the rows (a number in (0, 1])")
    return float(value)


def _with_style(entry: Benchmark, style: str, name: str) -> Benchmark:
    """The entry scored in `style`, with that style's catalogue prompt (a `prompt:` override still wins)."""
    if entry.task != "mcqa":
        raise UnknownBenchmarkError(
            f"benchmarks.{name}.mcqa_style: '{name}' is not an mcqa benchmark "
            f"(task {entry.task}); only mcqa benchmarks have a style"
        )
    if style not in MCQA_STYLES:
        raise UnknownBenchmarkError(
            f"benchmarks.{name}.mcqa_style: unknown style '{style}' (known: {', '.join(MCQA_STYLES)})"
        )
    return replace(entry, mcqa_style=style, prompt=entry.style_prompts.get(style, entry.prompt))
