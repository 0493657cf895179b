"""The library's import graph: every module imports alone and in any order, no cycles, layers point down.

The graph is parsed with ast over src/careval, function-level (lazy) imports included: a lazy import
that closes a cycle still ties the two modules together. LAYERS is the module map; run
`pytest -s tests/test_import_graph.py::test_module_map` to print it with the edges between packages.
"""

from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Module prefix -> layer (the longest prefix wins). A module may import only from its own layer or below.
LAYERS: dict[str, int] = {
    # 0 facts: no careval imports (parquet schemas, benchmark specs, config reading, small utilities)
    "careval.schemas": 0,
    "careval.datasets.benchmark": 0,
    "careval.config": 0,
    "careval.schema": 0,  # the schema file's defaults, for the backends and metrics (config adds the registry)
    "careval.redaction": 0,
    "careval.textio": 0,
    "careval.batches": 0,  # how an LLM job cuts its work into the calls it hands its model
    "careval.request_cache": 0,  # the request cache's store (its entries on disk)
    "careval.metrics.registry": 0,
    "careval.canonical": 0,  # the canonical identity of a job's spec (what Snakemake compares)
    "careval.runlock": 0,  # a working directory's Snakemake lock after a crash
    "careval.latex": 0,  # LaTeX escapes of the tables' writers
    "careval.results_check": 0,  # a results folder's files cut short, deleted since read, or left by another config
    "careval.plugins": 0,  # a config's own modules (a metric family, a study kind), imported by plan and jobs
    # 1 engines and model specs
    "careval.backends": 1,
    "careval.models": 1,
    "careval.joblog": 1,
    "careval.warm": 1,
    "careval.specs": 1,  # one frozen spec per job, built by the plan, read by the jobs
    # 2 metrics: estimators over text, log-likelihoods or a model
    "careval.metrics": 2,
    # 3 tasks: prompts and per-task scoring
    "careval.tasks": 3,
    # 4 benchmarks: the catalogue, loaders, normalisation
    "careval.datasets": 4,
    # 5 stages: inference, scoring, the CareQA build
    "careval.inference": 5,
    "careval.scoring": 5,
    "careval.lm_eval_scoring": 5,  # an lm-eval task's own metrics (the lm_eval family's scorer)
    "careval.careqa": 5,
    # 6 jobs that combine stages, and the analyses of their tables
    "careval.jobs": 6,
    "careval.manifest": 6,  # a run's provenance (results/manifest.json): the models' and datasets' identities
    "careval.analysis": 6,
    # 7 the config -> plan step, and its command line
    "careval.plan": 7,  # the run's plan (careval.plan.run, .build_run) and its studies' variants (.studies, .variants)
    "careval.inputs": 7,  # every input file a config names, read before any job (by the plan's callers)
    "careval.estimate": 7,  # what a config's served models will be sent and cost (careval estimate)
    "careval.cli": 8,
    "careval": 9,  # the package itself
}


def module_files(src: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(src: Path, root: str = "careval") -> dict[str, set[str]]:
    """module -> the modules of `root` it imports anywhere in its body (relative imports resolved)."""
    modules = module_files(src)
    graph: dict[str, set[str]] = {name: set() for name in modules if name.split(".")[0] == root}
    for name in graph:
        path = modules[name]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # `from pkg import sub` imports the submodule pkg.sub when there is one
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a name inside a module
                    target = target.rpartition(".")[0]
                if target.split(".")[0] == root and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def layer(module: str) -> int:
    prefixes = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    if not prefixes:
        raise AssertionError(f"{module} has no layer in LAYERS (tests/test_import_graph.py): add its package")
    return LAYERS[max(prefixes, key=len)]


GRAPH = import_graph(SRC)
MODULES = sorted(GRAPH)


def test_the_parser_and_cycle_finder_see_a_planted_cycle(tmp_path):
    """The checks below can fail: a package whose modules import each other lazily and relatively is caught."""
    pkg = tmp_path / "careval"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from careval.sub import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from ..b import g\n    return g\n")
    (pkg / "b.py").write_text("from careval.sub.a import f\nimport careval.sub.a.f\n")
    graph = import_graph(tmp_path)
    assert graph["careval.sub.a"] == {"careval.b"}
    assert graph["careval.b"] == {"careval.sub.a"}
    assert graph["careval.sub"] == {"careval.sub.a"}
    assert cycles(graph) == [["careval.b", "careval.sub.a"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_no_import_cycle():
    assert cycles(GRAPH) == [], "import cycles in src/careval"


def test_no_package_cycle():
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in GRAPH.items():
        packages[package(source)] |= {package(t) for t in targets if package(t) != package(source)}
    assert cycles(packages) == []


def test_the_plan_package_has_no_cycle_and_no_callback():
    """careval.plan: the run's plan, then the studies planned by the run's own code, then the package joining them;
    no module of it imports one that imports it back (no builder handed across a cycle)."""
    plan = {name: {t for t in targets if t.startswith("careval.plan")} for name, targets in GRAPH.items()}
    plan = {name: targets for name, targets in plan.items() if name.startswith("careval.plan")}
    run = {f"careval.plan.{m}" for m in ("families", "run", "roles", "run_checks", "build_run")}
    studies = {f"careval.plan.{m}" for m in ("study_kinds", "study", "variants", "studies", "study_checks")}
    assert set(plan) == {"careval.plan"} | run | studies
    assert cycles(plan) == []
    # the run's plan knows nothing of studies; a study's variants are planned by the run's own builder
    assert all(plan[name] <= run for name in run)
    assert plan["careval.plan.variants"] == {"careval.plan.build_run", "careval.plan.study_kinds"}
    # the studies' checks at the door read the registered study kinds
    assert plan["careval.plan.study_checks"] == {"careval.plan.study_kinds"}


WORKFLOW = SRC.parent / "workflow"


def test_no_module_imports_a_workflow_script():
    """The library never imports the workflow's scripts or rule files: the scripts are thin callers of it."""
    scripts = {path.stem for path in (WORKFLOW / "scripts").glob("*.py")}
    assert scripts, "no workflow scripts found"
    hits = []
    for name, path in module_files(SRC).items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            hits += [(name, target) for target in names if target.split(".")[0] in scripts | {"workflow", "scripts"}]
    assert hits == []


def test_metrics_never_import_scoring():
    edges = [
        (s, t)
        for s, ts in GRAPH.items()
        for t in ts
        if s.startswith("careval.metrics") and (t == "careval.scoring" or t.startswith("careval.scoring."))
    ]
    assert edges == []


# A table schema defined outside careval.schemas, waiting for its module's rework (figures.py is being split so that
# it only draws; the cluster table it builds then moves to careval.schemas with the code that computes it).
PENDING_SCHEMAS = set()


def test_every_table_schema_is_in_careval_schemas():
    """A module-level NAME_SCHEMA (or SCHEMA) assignment anywhere else is a second place for a table's columns."""
    modules = module_files(SRC)
    elsewhere = set()
    for name, path in modules.items():
        if name == "careval.schemas":
            continue
        for node in ast.parse(path.read_text()).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            elsewhere |= {(name, t.id) for t in targets if isinstance(t, ast.Name) and t.id.endswith("SCHEMA")}
    assert elsewhere == PENDING_SCHEMAS


def test_imports_point_down_the_layers():
    upward = [
        f"{s} (layer {layer(s)}) -> {t} (layer {layer(t)})"
        for s, ts in sorted(GRAPH.items())
        for t in sorted(ts)
        if layer(t) > layer(s)
    ]
    assert upward == []


def backend_classes(src: Path = SRC) -> set[str]:
    """The classes of careval.backends that implement the interface (careval.backends.base.Backend, directly or
    through another), found by their class statements."""
    bases: dict[str, set[str]] = {}
    for path in (src / "careval" / "backends").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    found = {"Backend"}
    while grown := {name for name, of in bases.items() if of & found} - found:
        found |= grown
    return found - {"Backend"}


def interface_breaches(src: Path = SRC) -> list[str]:
    """Outside careval/backends/: an import of a backend class, an isinstance() against one, or a read of a backend's
    `model` / `tokenizer` (a name ending in "backend", or "judge") -- what callers must reach through the interface."""
    classes, found = backend_classes(src), []
    for path in sorted((src / "careval").rglob("*.py")):
        if (src / "careval" / "backends") in path.parents:
            continue
        where = path.relative_to(src)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and {a.name for a in node.names} & classes:
                found.append(f"{where}:{node.lineno}: imports {sorted({a.name for a in node.names} & classes)}")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if names & classes:
                    found.append(f"{where}:{node.lineno}: isinstance against {sorted(names & classes)}")
            elif isinstance(node, ast.Attribute) and node.attr in ("model", "tokenizer"):
                owner = node.value.func if isinstance(node.value, ast.Call) else node.value
                name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                if name.endswith("backend") or name == "judge":
                    found.append(f"{where}:{node.lineno}: reads {name}.{node.attr}")
    return found


def test_callers_reach_backends_only_through_the_interface():
    """Relaxed Perplexity, the judge, inference and every other caller branch on a backend's declared capabilities,
    never on its class or its model and tokenizer (issue #39)."""
    assert {"HFBackend", "VLLMBackend", "VLLMServerBackend", "OpenAICompatBackend"} <= backend_classes()
    assert interface_breaches() == []


def test_the_interface_check_sees_a_planted_breach(tmp_path):
    package = tmp_path / "careval"
    (package / "backends").mkdir(parents=True)
    (package / "backends" / "x.py").write_text("class Backend: ...\nclass XBackend(Backend): ...\n")
    (package / "job.py").write_text(
        "from careval.backends.x import XBackend\n"
        "def f(backend, judge):\n"
        "    if isinstance(backend, (XBackend, int)):\n"
        "        return backend.tokenizer, judge.model, backend().model\n"
    )
    assert [line.split(": ", 1)[1] for line in interface_breaches(tmp_path)] == [
        "imports ['XBackend']",
        "isinstance against ['XBackend']",
        "reads backend.tokenizer",
        "reads judge.model",
        "reads backend.model",
    ]


def test_module_map(capsys):
    """Prints the layers with their packages and what each package imports (the module map)."""
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in GRAPH.items():
        packages[package(source)] |= {package(t) for t in targets if package(t) != package(source)}
    lines = []
    for level in sorted(set(LAYERS.values())):
        names = sorted(p for p in LAYERS if LAYERS[p] == level)
        lines.append(f"layer {level}: " + ", ".join(n.removeprefix("careval.") for n in names))
    for name in sorted(packages):
        if packages[name]:
            lines.append(f"  {name} -> {', '.join(sorted(packages[name]))}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert all(layer(m) >= 0 for m in MODULES)  # every module has a layer


def top_level_imports(src: Path, root: str = "careval") -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) of every import of another package at the top level of a module of `root` (not inside a
    function or a class): what importing that module loads anyway. `from m import a, b` gives (m, (a, b)), and
    `import m` gives (m, ())."""
    found: dict[tuple[str, tuple[str, ...]], None] = {}
    for name, path in module_files(src).items():
        if name.split(".")[0] != root:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                imports = [(alias.name, ()) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                imports = [(node.module, tuple(alias.name for alias in node.names))]
            else:
                continue
            found.update(dict.fromkeys(i for i in imports if i[0].split(".")[0] != root))
    return list(found)


# The interpreter that imports the orders: first every other package careval's modules import at their top level
# (torch, transformers, polars, ...: what each order would load anyway, 1-2 s of each fresh interpreter), no careval
# module; then each order in a fork of its own, so each starts with no careval module imported. A careval module
# that fails alone, or in an order, fails there as in a fresh interpreter. A fork that does not end within
# ORDER_TIMEOUT_S is killed and reported.
ORDER_TIMEOUT_S = 240
_IMPORTER = """
import importlib, json, os, signal, sys, traceback

preload, orders, timeout = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
for module, names in preload:
    try:
        imported = importlib.import_module(module)
        for name in names:
            getattr(imported, name, None)
    except Exception:  # e.g. vllm, not installed: the careval module importing it fails in its own fork
        pass
for order in orders:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        signal.alarm(timeout)
        error = ""
        for name in order:
            try:
                importlib.import_module(name)
            except BaseException:
                error = traceback.format_exc()
                break
        os.write(write, error.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        error = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not error and status:
        error = f"the fork importing {order} ended with wait status {status} (killed after {timeout} s?)"
    print(json.dumps(error or None), flush=True)
"""


def import_orders(orders: list[list[str]], src: Path = SRC, preload: bool = True) -> list[str | None]:
    """For each order of modules of `src`, the traceback of the first import that failed in it (None: all
    imported); `preload`: the other packages imported first (see above)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }
    arguments = [json.dumps(top_level_imports(src) if preload else []), json.dumps(orders), str(ORDER_TIMEOUT_S)]
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTER, *arguments], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    errors = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(errors) == len(orders), result.stdout[-3000:]
    return errors


def test_import_check_reports_a_failing_module():
    ok, missing = import_orders([["careval.schemas"], ["careval.schemas", "careval.no_such_module"]], preload=False)
    assert ok is None and missing is not None and "careval.no_such_module" in missing


def test_the_import_check_starts_each_order_without_careval(tmp_path):
    """An order sees no careval module that an earlier order imported, so a module fails alone as it would."""
    package = tmp_path / "src" / "careval"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("import json\nVALUE = 1\n")
    # imports alone only after careval.first (it reads sys.modules instead of importing it)
    (package / "second.py").write_text("import sys\nVALUE = sys.modules['careval.first'].VALUE\n")
    errors = import_orders([["careval.first", "careval.second"], ["careval.second"]], src=tmp_path / "src")
    assert errors[0] is None
    assert errors[1] is not None and "KeyError: 'careval.first'" in errors[1]


@pytest.mark.slow  # ~75 forks of an interpreter that imported torch, polars, transformers, ...: ~10 s on 2 cores
def test_every_module_imports_alone():
    errors = import_orders([[module] for module in MODULES])
    failed = {m: error.strip().splitlines()[-1] for m, error in zip(MODULES, errors) if error}
    assert failed == {}


# slow: the import check's interpreter loads torch, transformers and the metric packages first (~10 s); the ast
# checks above, which catch the cycles that make an order fail, stay in the quick loop.
@pytest.mark.slow
def test_all_modules_import_in_shuffled_orders():
    orders = [random.Random(seed).sample(MODULES, len(MODULES)) for seed in (0, 1, 2)]
    errors = import_orders(orders)
    failed = {seed: (order, error[-2000:]) for seed, (order, error) in enumerate(zip(orders, errors)) if error}
    assert failed == {}
