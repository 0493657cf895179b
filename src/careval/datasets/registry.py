"""The benchmark registry: the catalogue (one YAML file per benchmark in datasets/catalogue/) and a config's benchmarks,
each built by careval.datasets.definition from the same keys."""

from __future__ import annotations

from pathlib import Path

import yaml

from careval.datasets.benchmark import Benchmark
from careval.datasets.definition import (
    BenchmarkDefinitionError,
    LmEvalFacts,
    build_benchmark_spec,
    layered,
    read_definition_file,
    unknown_benchmark,
    with_include,
)
from careval.datasets.lm_eval_tasks import task_source

CATALOGUE_DIR = Path(__file__).resolve().parent / "catalogue"
# The keys that make an entry a benchmark of its own, not an override of the catalogue entry of its name (whose
# paper_task, description, meta_fields, prompt it would silently keep): under a catalogue name, only with `include:`.
DEFINING = ("task",)
# The catalogue's order (the paper's Table 1): the files it lists, each once; files starting with "_" are includes.
INDEX = "_index.yaml"


def read_catalogue(folder: Path = CATALOGUE_DIR) -> dict[str, dict]:
    """name -> the definition of every benchmark of the catalogue folder (includes resolved), in its index's order."""
    listed = (yaml.safe_load((folder / INDEX).read_text(encoding="utf-8")) or {}).get("benchmarks") or []
    files = sorted(path.stem for path in folder.glob("*.yaml") if not path.name.startswith("_"))
    unlisted = [name for name in files if name not in listed]
    missing = [name for name in listed if name not in files]
    twice = sorted({name for name in listed if listed.count(name) > 1})
    for problem, names in (("not listed in", unlisted), ("listed in but missing from", missing), ("twice in", twice)):
        if names:
            raise BenchmarkDefinitionError(f"{folder / INDEX}: {', '.join(names)} {problem} the catalogue's index")
    return {name: read_definition_file(folder / f"{name}.yaml", f"catalogue.{name}", strict=False) for name in listed}


CATALOGUE: dict[str, dict] = read_catalogue()
REGISTRY: dict[str, Benchmark] = {
    name: build_benchmark_spec(name, definition, f"catalogue.{name}") for name, definition in CATALOGUE.items()
}


def benchmark_definition(name: str, entry: dict | None = None) -> dict:
    """The whole definition of a config's benchmark `name`: its catalogue entry under its `format:` under the
    config's keys, or (a name not in the catalogue) the entry itself, its `include:` read from the working directory."""
    where = f"benchmarks.{name}"
    entry = {key: value for key, value in (entry or {}).items() if value is not None}
    if name in CATALOGUE:
        if "lm_eval_task" in entry:
            raise BenchmarkDefinitionError(
                f"{where}.lm_eval_task: '{name}' is a catalogue benchmark; an lm-eval task is a benchmark of its own "
                f"(give it a name that is not in the catalogue)"
            )
        defining = [key for key in DEFINING if key in entry]
        if "include" in entry:  # a definition of its own, from the file it names (the catalogue's own, or another)
            base, entry = {}, with_include(entry, Path("."), where)
        elif defining:
            raise BenchmarkDefinitionError(
                f"{where}: '{name}' is a catalogue benchmark, and this entry defines a benchmark ({', '.join(defining)}): "
                f"it would keep the catalogue's paper_task, description and meta_fields; give it a name of its own, "
                f"or start it from a file with include: (the catalogue's: "
                f"careval:src/careval/datasets/catalogue/{name}.yaml)"
            )
        else:
            base = CATALOGUE[name]
    elif not set(entry) - {"limit"}:
        raise unknown_benchmark(name, list(CATALOGUE), where)
    else:
        base, entry = {}, with_include(entry, Path("."), where)
    layers = [base]
    if entry.get("format"):
        formats = layered(base, entry).get("formats") or {}
        if entry["format"] not in formats:
            known = ", ".join(sorted(formats)) or "none"
            raise BenchmarkDefinitionError(f"{where}.format: unknown format '{entry['format']}' (known: {known})")
        layers.append(formats[entry["format"]])
    own = {key: value for key, value in entry.items() if key != "format"}
    if layers[0] and {"prompt", "style_prompts"} & set(own) and not {"instruction", "style_instructions"} & set(own):
        # a prompt of the config's own is the whole prompt: the catalogue's instruction (lm-eval's description)
        # belongs to the catalogue's prompt, not to one the user wrote
        own["instruction"] = ""
    return layered(*layers, own)


def get_benchmark(name: str, entry: dict | None = None, lm_eval_facts: LmEvalFacts | None = None) -> Benchmark:
    """The benchmark a config's entry names: a catalogue entry with the entry's keys over it, or a definition of
    its own (any other name). `lm_eval_facts`: what an lm-eval task is (careval.datasets.lm_eval_tasks.task_source;
    careval.datasets.definition.build_benchmark_spec)."""
    if name in REGISTRY and not {key for key, value in (entry or {}).items() if value is not None} - {"limit"}:
        return REGISTRY[name]
    definition = benchmark_definition(name, entry)
    return build_benchmark_spec(name, definition, f"benchmarks.{name}", lm_eval_facts or task_source)
