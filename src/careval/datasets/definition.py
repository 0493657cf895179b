"""A benchmark's definition -> its typed Benchmark: one loader for the catalogue's YAML files and a config's entries.

Both are written in the config schema's $defs/benchmark (workflow/schemas/config.schema.yaml), so a benchmark of
your own has exactly the keys a catalogue entry has. Definitions come in layers merged key by key, the later
winning: an `include:`d file under the file that includes it (lm-eval's include), a catalogue entry under a
`format:` of it under a config's keys. A layer that names a source (`source`, `path`, `lm_eval_task`) replaces the
whole source of the layers under it (its split, config, hint, ...). Every error is one line naming the benchmark and
its key; the defaults of the keys left unset come from the schema ($defs/benchmark_definition).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from careval.config import ConfigError, check_duplicate_keys, describe_error
from careval.datasets.benchmark import (
    CHOICE_TASKS,
    LM_EVAL_OUTPUT_TASKS,
    REPO_ROOT,
    TASKS,
    Benchmark,
    HFSource,
    LmEvalSource,
    LocalSource,
)
from careval.datasets.transforms import TRANSFORMS
from careval.schema import schema_part, with_schema_defaults
from careval.tasks.prompts import PromptTemplateError, check_prompt

# The keys that say where the rows come from; a layer naming a source (SOURCE_NAMES) replaces all of them.
SOURCE_KEYS = ("source", "config", "split", "data_files", "revision", "path", "hint", "lm_eval_task", "lm_eval_include")
SOURCE_NAMES = ("source", "path", "lm_eval_task")
# A path in the careval checkout (its shipped data), found from any working directory.
SHIPPED = "careval:"
# The keys an lm-eval task leaves to lm-eval (its documents, prompts, choices and gold).
LM_EVAL_BUILDS = (
    *(key for key in SOURCE_KEYS if key not in ("lm_eval_task", "lm_eval_include")),
    "task",
    "fields",
    "prompt",
    "style_prompts",
    "instruction",
    "style_instructions",
    "mcqa_style",
    "choices",
    "answer_format",
    "transform",
    "meta_fields",
    "select",
    "fraction",
    "mode",
    "on_bad_row",
    "formats",
    "format",
)
# What a benchmark of your own must name (beside a source), in the order the errors name them.
NEEDED = "a benchmark of your own needs task, fields and a source (path, or source with split), or lm_eval_task"


class BenchmarkDefinitionError(KeyError):
    """A benchmark definition that cannot be built; the message is one line naming the benchmark and the key."""

    def __str__(self) -> str:
        return self.args[0]


def layered(*layers: dict) -> dict:
    """The layers merged key by key, the later winning; `formats` per format; a source replaces a source."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if any(key in layer for key in SOURCE_NAMES):
            merged = {key: value for key, value in merged.items() if key not in SOURCE_KEYS}
        for key, value in layer.items():
            if key == "formats" and isinstance(value, dict) and isinstance(merged.get("formats"), dict):
                formats = dict(merged["formats"])
                for name, layout in value.items():
                    formats[name] = layered(formats.get(name) or {}, layout or {})
                merged["formats"] = formats
            else:
                merged[key] = value
    return merged


# libyaml's loader where PyYAML has it: the catalogue's files are read at every import (a third of a second saved)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_definition_file(path: Path, where: str, strict: bool = True) -> dict:
    """A benchmark file (a catalogue entry, an include), its `include:` resolved. `strict`: a key written twice in
    one mapping is an error (careval.config.check_duplicate_keys), as in a config; the catalogue's own files are
    held to it by a test instead (tests/datasets/test_definition.py), not at every import."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise BenchmarkDefinitionError(f"{where}: cannot read {path} ({error.strerror})") from None
    try:
        if strict:
            check_duplicate_keys(text, str(path))
        mapping = yaml.load(text, Loader=_LOADER)
    except (ConfigError, yaml.YAMLError) as error:
        raise BenchmarkDefinitionError(f"{where}: {' '.join(str(error).split())}") from None
    if not isinstance(mapping, dict):
        raise BenchmarkDefinitionError(f"{where}: {path} holds no mapping of benchmark keys")
    return with_include(mapping, path.parent, where, strict)


def with_include(mapping: dict, folder: Path, where: str, strict: bool = True) -> dict:
    """`mapping` on top of the file its `include:` names (relative to `folder`), recursively."""
    if "include" not in mapping:
        return dict(mapping)
    mapping = dict(mapping)
    name = mapping.pop("include")
    if not isinstance(name, str) or not name:
        raise BenchmarkDefinitionError(f"{where}.include: {name!r} is not a file name")
    path = REPO_ROOT / name.removeprefix(SHIPPED) if name.startswith(SHIPPED) else folder / name
    return layered(read_definition_file(path, f"{where}.include", strict), mapping)


_VALIDATOR: list[jsonschema.Draft202012Validator] = []


def _validator() -> jsonschema.Draft202012Validator:
    """The validator of $defs/benchmark_definition (the schema file as careval.schema keeps it), built once: every
    catalogue file is checked at import."""
    if not _VALIDATOR:
        definitions = {name: schema_part(name) for name in ("benchmark", "benchmark_definition")}
        _VALIDATOR.append(
            jsonschema.Draft202012Validator({"$defs": definitions, **definitions["benchmark_definition"]})
        )
    return _VALIDATOR[0]


def _validate(mapping: dict, where: str) -> None:
    """The mapping against $defs/benchmark_definition; the first violation as one line naming the key."""
    errors = sorted(_validator().iter_errors(mapping), key=lambda e: (len(e.absolute_path), list(e.path)))
    if errors:
        raise BenchmarkDefinitionError(describe_error(errors[0], where).replace("\n", " "))


def _named(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def unknown_benchmark(name: str, known: list[str], where: str) -> BenchmarkDefinitionError:
    """A name neither in the catalogue nor defined: one line listing the catalogue."""
    return BenchmarkDefinitionError(
        f"{where}: unknown benchmark '{name}': not in the catalogue ({_named(name, known)}known: {', '.join(known)}), "
        f"and not defined here ({NEEDED})"
    )


def _source(mapping: dict, where: str) -> HFSource | LocalSource:
    if "path" in mapping:
        path = mapping["path"]
        if path.startswith(SHIPPED):
            path = str(REPO_ROOT / path.removeprefix(SHIPPED))
        return LocalSource(path, mapping["hint"])
    if "source" not in mapping:
        raise BenchmarkDefinitionError(f"{where}: no source: set path (a local file) or source (hf:<repo>, with split)")
    if "split" not in mapping:
        raise BenchmarkDefinitionError(f"{where}.split: missing (source {mapping['source']} needs the split it reads)")
    return HFSource(
        repo=mapping["source"].removeprefix("hf:"),
        split=mapping["split"],
        config=mapping.get("config"),
        data_files=mapping.get("data_files"),
        revision=mapping.get("revision"),
    )


def _check_fields(task: str, mapping: dict, where: str) -> None:
    fields = mapping["fields"]
    needed = ["question"]
    if task in CHOICE_TASKS:
        needed += ["answer"] + ([] if "choices" in mapping else ["options"])
    else:
        needed += ["reference"]
    missing = [key for key in needed if key not in fields]
    if missing:
        why = "maps its gold answer and options (or `choices`)" if task in CHOICE_TASKS else "maps its reference text"
        raise BenchmarkDefinitionError(
            f"{where}.fields: no {', '.join(missing)} (the question is every sample's text; a {task} benchmark {why})"
        )
    if task not in CHOICE_TASKS and ("options" in fields or "answer" in fields or "choices" in mapping):
        raise BenchmarkDefinitionError(
            f"{where}.fields: a {task} benchmark has a reference text, not options or an answer"
        )


def _prompt(mapping: dict, task: str, where: str) -> tuple[str, str]:
    """The prompt and the key that sets it: `prompt`, else the style prompt of the entry's mcqa_style."""
    if "prompt" in mapping:
        return mapping["prompt"], f"{where}.prompt"
    style = mapping["mcqa_style"]
    styled = mapping.get("style_prompts") or {}
    if task == "mcqa" and style in styled:
        return styled[style], f"{where}.style_prompts.{style}"
    raise BenchmarkDefinitionError(
        f'{where}.prompt: missing (the template each sample fills, e.g. "Question: {{question}}\\nAnswer:")'
    )


def _instruction(mapping: dict, task: str) -> str:
    """The instruction (lm-eval's task `description`): `instruction`, else that of the entry's mcqa_style, else none."""
    if "instruction" in mapping:
        return mapping["instruction"]
    styled = mapping.get("style_instructions") or {}
    return styled.get(mapping["mcqa_style"], "") if task == "mcqa" else ""


def _literal(text: str) -> str:
    """`text` as a template part that fills to itself (its braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def _tuple(value) -> tuple | None:
    return None if value is None else tuple(value)


# What an lm-eval task is: (task, include folder, where) -> its LmEvalSource (careval.datasets.lm_eval_tasks.task_source).
LmEvalFacts = Callable[[str, "str | None", str], LmEvalSource]


def build_benchmark_spec(name: str, mapping: dict, where: str, lm_eval_facts: LmEvalFacts | None = None) -> Benchmark:
    """The Benchmark of a whole definition (layers merged, `format` applied, `include` resolved): its keys checked
    against the schema, the keys a benchmark needs, its transform's and task's names and its prompt's placeholders.
    `lm_eval_facts(task, include, where)`: the LmEvalSource of an lm-eval task (careval.datasets.lm_eval_tasks)."""
    mapping = {key: value for key, value in mapping.items() if value is not None and key != "limit"}
    _validate(mapping, where)
    if "lm_eval_task" in mapping:
        return _lm_eval_benchmark(name, mapping, where, lm_eval_facts)
    if "task" not in mapping:
        raise BenchmarkDefinitionError(f"{where}.task: missing ({NEEDED})")
    task = mapping["task"]
    if task not in TASKS:
        raise BenchmarkDefinitionError(f"{where}.task: unknown task '{task}' (known: {', '.join(TASKS)})")
    if "fields" not in mapping:
        raise BenchmarkDefinitionError(f"{where}.fields: missing (which source field is each sample's question, ...)")
    if "mcqa_style" in mapping and task != "mcqa":
        raise BenchmarkDefinitionError(
            f"{where}.mcqa_style: '{name}' is not an mcqa benchmark (task {task}); only mcqa benchmarks have a style"
        )
    if mapping.get("transform") is not None and mapping["transform"] not in TRANSFORMS:
        raise BenchmarkDefinitionError(
            f"{where}.transform: unknown transform '{mapping['transform']}' (known: {', '.join(sorted(TRANSFORMS))})"
        )
    _check_fields(task, mapping, where)
    filled = with_schema_defaults(mapping, "benchmark_definition")
    source = _source(filled, where)
    prompt, prompt_key = _prompt(filled, task, where)
    try:
        check_prompt(
            prompt,
            task,
            has_context="context" in filled["fields"],
            has_options=task in CHOICE_TASKS,
            key=prompt_key,
            mcqa_style=filled["mcqa_style"],
        )
    except PromptTemplateError as error:
        raise BenchmarkDefinitionError(str(error)) from None
    meta = filled["meta_fields"]
    instruction = _instruction(filled, task)
    return Benchmark(
        name=name,
        task=task,
        source=source,
        fields=dict(filled["fields"]),
        # the whole template: the instruction first, as written, so a sample's prompt without a chat template is the
        # instruction and the filled prompt (lm-eval's description and doc_to_text); the instruction is kept too,
        # for the system turn under a chat template
        prompt=_literal(instruction) + prompt,
        instruction=instruction,
        answer_format=filled["answer_format"],
        description=filled["description"],
        max_new_tokens=filled.get("max_new_tokens"),
        meta_fields=dict(meta) if isinstance(meta, dict) else tuple(meta),
        choices=_tuple(filled.get("choices")),
        transform=filled.get("transform"),
        mode=filled["mode"],
        on_bad_row=filled["on_bad_row"],
        select=dict(filled["select"]),
        fraction=filled.get("fraction"),
        extra_metrics=tuple(filled["extra_metrics"]),
        stop=_tuple(filled.get("stop")),
        min_chars=filled["min_chars"],
        mcqa_style=filled["mcqa_style"],
        paper_task=filled.get("paper_task"),
        paper_dataset=filled.get("paper_dataset"),
    )


def _lm_eval_benchmark(name: str, mapping: dict, where: str, lm_eval_facts: LmEvalFacts | None) -> Benchmark:
    """An lm-eval task: its careval task follows its output type; lm-eval builds its samples (no fields, no prompt:
    each sample's question is lm-eval's whole context); its generation settings unless the entry sets them."""
    for key in LM_EVAL_BUILDS:
        if key in mapping:
            raise BenchmarkDefinitionError(
                f"{where}.{key}: an lm-eval task builds its own documents, prompts and gold "
                f"(lm_eval_task: {mapping['lm_eval_task']}); leave {key} out"
            )
    if lm_eval_facts is None:
        raise BenchmarkDefinitionError(f"{where}.lm_eval_task: lm-eval tasks are read where a config is (registry)")
    source: LmEvalSource = lm_eval_facts(mapping["lm_eval_task"], mapping.get("lm_eval_include"), where)
    filled = with_schema_defaults(mapping, "benchmark_definition")
    generation = source.generation or {}
    stop = filled.get("stop", generation.get("until"))
    return Benchmark(
        name=name,
        task=LM_EVAL_OUTPUT_TASKS[source.output_type],
        source=source,
        fields={},
        prompt="{question}",
        answer_format=filled["answer_format"],
        description=filled["description"] or f"lm-eval task {source.task}",
        max_new_tokens=filled.get("max_new_tokens", generation.get("max_gen_toks")),
        meta_fields=(),
        choices=None,
        transform=None,
        mode=filled["mode"],
        on_bad_row=filled["on_bad_row"],
        select={},
        fraction=None,
        extra_metrics=tuple(filled["extra_metrics"]),
        stop=_tuple(stop),
        min_chars=filled["min_chars"],
        mcqa_style=filled["mcqa_style"],
        paper_task=filled.get("paper_task"),
        paper_dataset=filled.get("paper_dataset"),
    )
