"""lm-eval task files as benchmarks: what a task is (read when a config is), and its documents as careval's samples.

A benchmark `lm_eval_task: <task or group>` (`lm_eval_include: <folder>` for your own task YAMLs) is read with
lm-eval's own loader (its TaskManager, Jinja templates, `!function` utils; `pip install -e '.[lm-eval]'`):

- :func:`task_source`, when a config is read: the task's output type, metric names and generation settings, from
  its YAML (lm-eval's index, cached per task and include folder: indexing lm-eval's 14,000 task files takes seconds),
  so the plan knows which careval task it runs as and a misspelt task stops the run with one line;
- :func:`lm_eval_samples`, in the normalisation job: lm-eval builds the task (its dataset, process_docs, fewshot
  sampler seeded as lm-eval seeds it) and every document's requests (Task.build_all_requests); each document
  becomes one canonical sample whose question is lm-eval's whole context, with the exact requests, generation
  settings and target in its meta, so inference needs no lm-eval (careval's jobs, engine and shared-prefix scoring);
- :func:`load_tasks`, in the scoring job (careval.lm_eval_scoring): the same tasks, whose filters and
  process_results score careval's responses per document.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from careval.datasets.benchmark import LM_EVAL_OUTPUT_TASKS, Benchmark, LmEvalSource
from careval.datasets.definition import BenchmarkDefinitionError
from careval.metrics.registry import UnknownMetricError, lm_eval_metric_name, metric_spec
from careval.schemas import DATASET_SCHEMA, LOGLIK_REQUEST_SCHEMA

# lm-eval's evaluator seeds the fewshot sampler with this by default (simple_evaluate's fewshot_random_seed).
FEWSHOT_SEED = 1234
# How to get lm-eval, named by every error that needs it.
INSTALL = "pip install -e '.[lm-eval]'"
# The `datasets` builders that read local files (a task's `dataset_kwargs.data_files`, relative to the working
# directory); any other dataset_path is a hub dataset, whose data_files are the repository's.
LOCAL_BUILDERS = ("json", "csv", "parquet", "text", "arrow", "pandas", "xml")
# What the facts kept per task hold (a change reads every task again).
FACTS_VERSION = 2


def _version(where: str) -> str:
    try:
        return importlib.metadata.version("lm_eval")
    except importlib.metadata.PackageNotFoundError:
        raise BenchmarkDefinitionError(f"{where}.lm_eval_task: lm-eval is not installed ({INSTALL})") from None


def _cache_file(task: str, include: str | None, version: str) -> Path:
    """Where the facts of `task` are kept: keyed by lm-eval's version and the include folder's files (name, size,
    time), so an edited task file is read again."""
    listing = []
    if include:
        for path in sorted(Path(include).rglob("*")):
            if path.suffix in (".yaml", ".yml", ".py", ".jinja") and path.is_file():
                stat = path.stat()
                listing.append([str(path.relative_to(include)), stat.st_size, stat.st_mtime_ns])
    key = json.dumps([FACTS_VERSION, version, task, str(Path(include).resolve()) if include else None, listing])
    folder = Path(os.environ.get("CAREVAL_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache") / "careval")
    return folder.expanduser() / "lm_eval_tasks" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def task_source(task: str, include: str | None, where: str) -> LmEvalSource:
    """What the lm-eval task (or group) `task` is: a one-line error naming `where`'s key if careval cannot run it."""
    version = _version(where)
    if include is not None and not Path(include).is_dir():
        raise BenchmarkDefinitionError(f"{where}.lm_eval_include: {include} is not a folder (of lm-eval task YAMLs)")
    if include is not None:
        check_task_files(Path(include), f"{where}.lm_eval_include")
    cache = _cache_file(task, include, version)
    if cache.is_file():
        facts = json.loads(cache.read_text(encoding="utf-8"))
    else:
        facts = _read_facts(task, include, where)
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(facts), encoding="utf-8")
        partial.replace(cache)  # atomic: runs planning at once (a cluster's jobs) read one whole file
    for given in facts["data_files"]:  # on disk now, at every plan: the facts are kept, the files may move
        _check_data_file(given, f"{where}.lm_eval_task: '{task}' reads data_files")
    return LmEvalSource(
        task=task,
        include=include,
        output_type=facts["output_type"],
        metrics=tuple(facts["metrics"]),
        generation=facts["generation"],
    )


class _TaggedLoader(yaml.SafeLoader):
    """YAML as lm-eval's loader reads it, its `!function` tags kept as text (only the syntax is checked here)."""


_TaggedLoader.add_multi_constructor("!", lambda loader, tag, node: None)


def check_task_files(folder: Path, where: str) -> None:
    """Every task YAML of an include folder parses, and every file its `include:` names exists: lm-eval's index skips
    a file it cannot read, so its task would be "no task of lm-eval"; here the file and line are named instead."""
    for path in sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")]):
        try:
            mapping = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaggedLoader)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            context, begun = getattr(error, "context", None), getattr(error, "context_mark", None)
            if context and begun is not None:
                problem += f"; {context} from line {begun.line + 1}"
            raise BenchmarkDefinitionError(f"{where}: {path}: not valid YAML ({at}{problem})") from None
        except (OSError, UnicodeDecodeError) as error:
            raise BenchmarkDefinitionError(f"{where}: {path}: cannot be read ({error})") from None
        includes = mapping.get("include") if isinstance(mapping, dict) else None
        for name in includes if isinstance(includes, list) else [includes] if includes else []:
            target = Path(name) if Path(str(name)).is_absolute() else path.parent / str(name)
            if not target.is_file():
                raise BenchmarkDefinitionError(f"{where}: {path}: include: {name}: no file {target}")


def _check_data_file(given: str, what: str) -> None:
    """A local data file a task reads (a glob pattern: at least one match), there and readable, at plan time."""
    found = sorted(glob.glob(given)) if any(ch in given for ch in "*?[") else [given]
    if not found or not Path(found[0]).is_file():
        raise BenchmarkDefinitionError(f"{what} {given}, which does not exist (looked in {Path.cwd()})")
    unreadable = [path for path in found if not os.access(path, os.R_OK)]
    if unreadable:
        raise BenchmarkDefinitionError(f"{what} {unreadable[0]}, which cannot be read (permission denied)")


def _data_files(cfg: dict) -> list[str]:
    """The local files a task's dataset reads (`dataset_kwargs.data_files` of a local builder: a path, a list or a
    mapping split -> path(s))."""
    path = cfg.get("dataset_path")
    files = (cfg.get("dataset_kwargs") or {}).get("data_files")
    if files is None or not (path in LOCAL_BUILDERS or (isinstance(path, str) and Path(path).is_dir())):
        return []
    values = list(files.values()) if isinstance(files, dict) else [files]
    flat = [item for value in values for item in (value if isinstance(value, list) else [value])]
    base = Path(path) if path not in LOCAL_BUILDERS else Path()
    return [str(base / str(item)) for item in flat]


def _index(include: str | None, defaults: bool) -> dict:
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=include, include_defaults=defaults).task_index


def _leaf_configs(name: str, index: dict, overrides: dict, where: str) -> list[dict]:
    """The configs of the tasks `name` (a task, group or tag of lm-eval's index) runs, with a group's task
    overrides as lm-eval's TaskFactory merges them."""
    from lm_eval.config.group import GroupConfig
    from lm_eval.tasks._index import Kind

    entry = index.get(name)
    if entry is None:
        raise KeyError(name)
    if entry.kind is Kind.PY_TASK:
        raise BenchmarkDefinitionError(
            f"{where}.lm_eval_task: '{name}' is a Python task class, not a task YAML careval can read"
        )
    if entry.kind is Kind.TAG:
        return [cfg for member in sorted(entry.tags) for cfg in _leaf_configs(member, index, overrides, where)]
    if entry.kind is not Kind.GROUP:
        return [{**(entry.cfg or {}), **overrides}]
    group_fields = set(GroupConfig.__dataclass_fields__)
    merged = {**{k: v for k, v in (entry.cfg or {}).items() if k not in group_fields}, **overrides}
    leaves = []
    for item in (entry.cfg or {}).get("task") or []:
        if isinstance(item, str):
            leaves += _leaf_configs(item, index, merged, where)
        elif isinstance(item, dict) and item.get("task") in index:
            leaves += _leaf_configs(item["task"], index, {**merged, **item}, where)
        elif isinstance(item, dict) and "task" in item:
            leaves.append({**merged, **item})  # an inline task of the group
        else:
            raise BenchmarkDefinitionError(
                f"{where}.lm_eval_task: group '{name}' holds an inline group careval cannot read"
            )
    return leaves


def _leaves(task: str, include: str | None, where: str) -> list[dict]:
    """The task's leaf configs from the include folder's index alone where it has them all, else with lm-eval's."""
    if include:
        try:
            return _leaf_configs(task, _index(include, defaults=False), {}, where)
        except KeyError:
            pass  # a task of lm-eval's own, or a group naming some
    index = _index(include, defaults=True)
    try:
        return _leaf_configs(task, index, {}, where)
    except KeyError as missing:
        import difflib

        close = difflib.get_close_matches(str(missing.args[0]), list(index), n=3)
        hint = f" (close: {', '.join(close)})" if close else ""
        what = f"'{task}'" if missing.args[0] == task else f"'{missing.args[0]}' (of '{task}')"
        raise BenchmarkDefinitionError(
            f"{where}.lm_eval_task: {what} is no task, group or tag of lm-eval{hint}"
        ) from None


def _read_facts(task: str, include: str | None, where: str) -> dict[str, Any]:
    """Output type, metric names and generation settings of the task, as lm-eval's TaskConfig reads its YAML."""
    from lm_eval.api.registry import DEFAULT_METRIC_REGISTRY
    from lm_eval.config.task import TaskConfig
    from lm_eval.defaults import DEFAULT_MAX_GEN_TOKS
    from lm_eval.models.utils import normalize_gen_kwargs

    facts: list[dict] = []
    data_files: list[str] = []
    for cfg in _leaves(task, include, where):
        data_files += [path for path in _data_files(cfg) if path not in data_files]
        known = {k: v for k, v in cfg.items() if k in TaskConfig.__dataclass_fields__}
        config = TaskConfig(**known)
        name = config.task
        output_type = config.output_type
        if output_type not in LM_EVAL_OUTPUT_TASKS:
            raise BenchmarkDefinitionError(
                f"{where}.lm_eval_task: '{name}' is a {output_type} task; careval runs "
                f"{', '.join(LM_EVAL_OUTPUT_TASKS)} tasks"
            )
        if config.repeats != 1 or config.doc_to_image or config.doc_to_audio:
            why = f"repeats its generation {config.repeats} times" if config.repeats != 1 else "has images or audio"
            raise BenchmarkDefinitionError(
                f"{where}.lm_eval_task: '{name}' {why}; careval runs one text request per document"
            )
        metrics = [m["metric"] for m in config.metric_list or []] or DEFAULT_METRIC_REGISTRY[output_type]
        filter_list: list[dict] = config.filter_list or []  # pyright: ignore[reportAssignmentType]  (YAML: a list)
        filters = [f["name"] for f in filter_list] or ["none"]
        generation = None
        if output_type == "generate_until":
            generation = normalize_gen_kwargs(config.generation_kwargs or {}, DEFAULT_MAX_GEN_TOKS)
        facts.append(
            {"task": name, "output_type": output_type, "metrics": metrics, "filters": filters, "gen": generation}
        )
    for key, what in (("output_type", "output types"), ("gen", "generation settings")):
        if len({json.dumps(fact[key], sort_keys=True) for fact in facts}) > 1:
            raise BenchmarkDefinitionError(
                f"{where}.lm_eval_task: the tasks of '{task}' differ in their {what}; give each a benchmark of its own"
            )
    names = []
    for fact in facts:
        for metric in fact["metrics"]:
            if not isinstance(metric, str):
                raise BenchmarkDefinitionError(
                    f"{where}.lm_eval_task: '{fact['task']}' computes a metric by a function"
                )
            for filter_key in fact["filters"]:
                name = lm_eval_metric_name(metric, filter_key)
                try:
                    metric_spec(name)
                except UnknownMetricError:
                    raise BenchmarkDefinitionError(
                        f"{where}.lm_eval_task: metric '{metric}' of '{fact['task']}' is not one careval knows "
                        f"(lm-eval's built-in metrics: careval/metrics/registry.py LM_EVAL_METRICS)"
                    ) from None
                if name not in names:
                    names.append(name)
    return {
        "output_type": facts[0]["output_type"],
        "metrics": names,
        "generation": facts[0]["gen"],
        "data_files": data_files,
    }


# --- the normalisation job: lm-eval's documents and requests as careval's samples


def load_tasks(task: str, include: str | None) -> dict[str, Any]:
    """lm-eval's Task objects of the benchmark (a group: its leaf tasks), by task name, as lm-eval builds them."""
    try:
        from lm_eval.tasks import TaskManager
    except ImportError:
        raise BenchmarkDefinitionError(f"lm-eval is not installed ({INSTALL})") from None
    if include:
        try:
            manager = TaskManager(include_path=include, include_defaults=False)
            _leaf_configs(task, manager.task_index, {}, "lm_eval_task")
        except KeyError:
            manager = TaskManager(include_path=include)
    else:
        manager = TaskManager()
    return manager.load(task)["tasks"]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _gold(task: Any, doc: dict, choices: list[str] | None) -> int | None:
    """The gold choice's index as lm-eval's process_results reads it (None where it is not one index)."""
    gold = task.doc_to_text(doc) if task.multiple_input else task.doc_to_target(doc)
    if isinstance(gold, list):
        gold = gold[0] if gold else None
    if isinstance(gold, str) and choices is not None:
        gold = choices.index(gold) if gold in choices else None
    return gold if isinstance(gold, int) and not isinstance(gold, bool) else None


def _reference(task: Any, doc: dict, output_type: str, choices: list[str] | None) -> str | None:
    """The text careval's text metrics compare a generation to (lm-eval's gold as its generate_until scoring
    reads it; a list's first), or the text scored by a log-likelihood task."""
    if output_type == "multiple_choice":
        return None
    target = task.doc_to_target(doc)
    if output_type == "generate_until" and choices is not None and isinstance(target, int):
        target = choices[target]
    if isinstance(target, list):
        target = target[0] if target else ""
    return str(target)


def document_samples(entry: Benchmark, name: str, task: Any, instances: list, prefix: bool) -> Iterator[dict]:
    """One canonical sample per document of `task` (its built `instances`), ids `<doc_id>` or `<task>/<doc_id>`."""
    source = entry.lm_eval
    assert source is not None
    by_doc: dict[int, list] = {}
    for instance in instances:
        by_doc.setdefault(instance.doc_id, []).append(instance)
    output_type = task.OUTPUT_TYPE
    careval_task = LM_EVAL_OUTPUT_TASKS[output_type]
    for doc_id, requests in by_doc.items():
        requests.sort(key=lambda instance: instance.idx)
        doc = requests[0].doc
        choices = task.doc_to_choice(doc) if task.config.doc_to_choice is not None else None
        arguments = [list(instance.arguments) for instance in requests]
        yield {
            "id": f"{name}/{doc_id}" if prefix else str(doc_id),
            "benchmark": entry.name,
            "task": careval_task,
            "question": str(arguments[0][0]),  # lm-eval's context (a rolling task's: the text it scores)
            "context": None,
            "options": [str(choice) for choice in choices] if output_type == "multiple_choice" and choices else None,
            "answer": _gold(task, doc, choices) if output_type == "multiple_choice" else None,
            "reference": _reference(task, doc, output_type, choices),
            "meta": json.dumps(
                {
                    "lm_eval": {
                        "source": source.task,  # the benchmark's task or group, and its include folder
                        "include": source.include,
                        "task": name,
                        "doc_id": doc_id,
                        "output_type": output_type,
                        "requests": _jsonable(arguments),
                        "target": _jsonable(task.doc_to_target(doc)),
                    }
                },
                ensure_ascii=False,
            ),
        }


def lm_eval_samples(entry: Benchmark, limit: int | None = None) -> pl.DataFrame:
    """The benchmark's samples: every document of its task(s) (lm-eval's `limit`: the first N of each task)."""
    source = entry.lm_eval
    assert source is not None, f"{entry.name} is no lm-eval task"
    tasks = load_tasks(source.task, source.include)
    rows: list[dict] = []
    for name, task in tasks.items():
        task.set_fewshot_seed(seed=FEWSHOT_SEED)
        task.build_all_requests(limit=limit)
        rows += document_samples(entry, name, task, task.instances, prefix=len(tasks) > 1)
    return pl.DataFrame(rows, schema=DATASET_SCHEMA)


# --- inference: the requests stored in each sample, for careval's backends (no lm-eval needed)


def lm_eval_meta(sample: dict) -> dict:
    return json.loads(sample["meta"])["lm_eval"]


# The metrics lm-eval reads from a request's is_greedy (whether its continuation is the model's greedy one), by
# output type: careval asks for those flags (request kind greedy) only where the task computes one of them.
GREEDY_METRICS = {"loglikelihood": ("acc",), "multiple_choice": ("exact_match",)}


def needs_greedy(source: LmEvalSource) -> bool:
    names = GREEDY_METRICS.get(source.output_type, ())
    return any(metric.partition(",")[0] in names for metric in source.metrics)


def loglik_requests(samples: pl.DataFrame, greedy: bool) -> pl.DataFrame:
    """lm-eval's log-likelihood requests of every document, verbatim: a multiple-choice document's choices (kind
    option, in lm-eval's order, all after one context), a loglikelihood task's continuation (kind continuation),
    a rolling task's text (kind reference: careval's rolling log-likelihood, as lm-eval's). `greedy`: each
    conditional request again as kind greedy (its loglik then 1.0 where the continuation is greedy, else 0.0)."""
    rows = []
    for sample in samples.iter_rows(named=True):
        meta = lm_eval_meta(sample)
        kind = {"multiple_choice": "option", "loglikelihood": "continuation"}.get(meta["output_type"], "reference")
        for index, arguments in enumerate(meta["requests"]):
            context, continuation = ("", arguments[0]) if kind == "reference" else arguments[:2]
            for request_kind in (kind, "greedy") if greedy and kind != "reference" else (kind,):
                rows.append(
                    {
                        "id": sample["id"],
                        "kind": request_kind,
                        "option": index,
                        "context": context,
                        "continuation": continuation,
                    }
                )
    return pl.DataFrame(rows, schema=LOGLIK_REQUEST_SCHEMA)
