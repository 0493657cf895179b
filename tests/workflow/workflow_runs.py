"""Helpers for tests that run the workflow for real: a clone-like working directory, a bounded
snakemake call, the jobs a run executed and a fingerprint of result files."""

from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def reduced_config(repo: Path, models: list[str], benchmarks: dict[str, dict | None], max_new_tokens: int = 4) -> dict:
    """The demo config cut down to a few models and benchmarks. Each model is read as a local
    folder from the repository's resources/models (prepared once, e.g. by the demo_model_dirs
    fixture), so a run has no preparation job and never writes there."""
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["models"] = {
        name: _as_local(config["models"][name], repo / "resources" / "models" / name) for name in models
    }
    config["benchmarks"] = benchmarks
    config["generation"]["max_new_tokens"] = max_new_tokens
    # the demo's studies name its models and benchmarks: a run of fewer plans none (config/studies.yaml has its own)
    config.pop("studies", None)
    # the demo's model sets name its three models: keep the ones this run has
    sets = config["analysis"].get("model_sets", {})
    config["analysis"]["model_sets"] = {name: [m for m in members if m in models] for name, members in sets.items()}
    # no CareQA statistics (Table 4, figures 5-7): their tokenizer is a demo model these runs may not keep, and the
    # DAGs these runs check are the evaluation's (tests/careqa/test_careqa_statistics.py covers the statistics)
    config.get("careqa", {}).pop("statistics", None)
    # the demo's jury keeps its members this run has; with one left it is that single judge (a `model:`), with
    # none its first member (SmolLM2, the demo's judge before the jury: a caller adds that model, as the
    # rerun-scope slice does, or sets its own judge)
    judge = config["metrics"].get("judge") or {}
    if "models" in judge:
        members = judge.pop("models")
        kept = [m for m in members if m in models]
        if len(kept) >= 2:
            judge["models"] = kept
        else:
            judge["model"] = (kept or members)[0]
    # the demo's ratings name all three models: a run without one of them has no ratings to check
    if set(models) != set(sets.get("demo", models)):
        config["analysis"]["human_ratings"] = None
    return config


def _as_local(entry: dict, folder: Path) -> dict:
    entry = {key: value for key, value in entry.items() if key not in ("gguf", "sha256")}
    return {**entry, "source": f"local:{folder}"}


def make_workdir(repo: Path, work: Path, config: dict, profiles: tuple[str, ...] = ()) -> Path:
    """What a clone holds (no results, no models; the workflow profile profiles/default), with `config` as
    config/config.yaml; `profiles`: the cluster and local profiles to copy too."""
    work.mkdir(parents=True)
    for item in ("Snakefile", "workflow", "profiles", *profiles):
        src = repo / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / item)
    write_config(work, config)
    return work


def write_config(work: Path, config: dict) -> None:
    (work / "config").mkdir(exist_ok=True)
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake(
    args: list[str], cwd: Path, timeout: int, program: tuple[str, ...] = (SNAKEMAKE,)
) -> subprocess.CompletedProcess:
    """snakemake (or `program`, which runs it) under `timeout -k 10`: a hung run (e.g. a status poll that never ends)
    is killed, and the test sees exit status 124 instead of hanging CI."""
    command = ["timeout", "-k", "10", str(timeout), *program, *args]
    return subprocess.run(command, cwd=cwd, env={**os.environ, **ENV}, capture_output=True, text=True)


# The two-model run that test_reruns.py and test_warm_worker_run.py share (the fixture two_model_run, conftest.py):
# both files are in this xdist group, so one worker runs them and builds it once.
TWO_MODEL_GROUP = "two_model_run"
TWO_MODELS = ("smollm2-135m-instruct", "gemma3-270m")
TWO_BENCHMARKS = {"demo_mcqa": {"limit": 2}, "demo_open_qa": {"limit": 2}}
SCORES = "results/summary/scores.parquet"


@dataclass(frozen=True)
class FinishedRun:
    work: Path  # the working directory: what a clone holds, plus results/ and .snakemake/
    config: dict  # its config/config.yaml
    log: str  # snakemake's stdout and stderr


def two_model_config(repo: Path, models: tuple[str, ...] = TWO_MODELS) -> dict:
    """The shared run's config; with a subset of its models, the config whose jobs of those models are the shared
    run's (tests/workflow/test_slurm.py runs SmolLM2's on SLURM)."""
    config = reduced_config(repo, list(models), {name: dict(entry) for name, entry in TWO_BENCHMARKS.items()})
    # the judge and Relaxed Perplexity at their smallest (one answer graded, one sample of 8 tokens, as
    # test_crash_recovery.py runs them; the demo's: both samples, 16 tokens): the warm run 68 -> 57 CPU-s, and this
    # config runs five times (the warm and the cold run, SmolLM2's on SLURM, the reruns' models); every check of its
    # files is against another run of the same config, none against a value of its own
    config["metrics"]["judge"].update(limit=1)
    config["metrics"]["relaxed_perplexity"].update(limit=1, max_tokens=8)
    return config


def run_two_models(repo: Path, folder: Path, warm: bool) -> FinishedRun:
    """The demo's two hf models (SmolLM2, Gemma-3) on an MCQA and an open benchmark of two samples each, run to the
    summary table; `warm`: with the warm worker (the local default) or every job a process of its own."""
    config = two_model_config(repo)
    config["resources"]["warm_worker"] = warm
    work = make_workdir(repo, folder / "careval", config)
    result = snakemake(["--cores", "2", SCORES], work, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    return FinishedRun(work, config, result.stdout + result.stderr)


_JOB = re.compile(r"^(?:local)?rule (\w+):\n((?:    .*\n)*)", re.MULTILINE)


def job_kind(rule: str, wildcards: dict) -> str:
    """A job's kind by the names the studies had as rules of their own: a one-family scoring job score_<family>, and
    a job under a study variant's folder (wildcard vpath) study_<kind> (Table 6's examples keep their name)."""
    kind = f"score_{wildcards['family']}" if rule == "score_family" else rule
    return f"study_{kind}" if wildcards.get("vpath") and rule != "relaxed_perplexity_examples" else kind


def jobs_run(log: str) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job a run started, from snakemake's log."""
    jobs = set()
    for rule, body in _JOB.findall(log):
        wildcards = re.search(r"^    wildcards: (.*)$", body, re.MULTILINE)
        jobs.add((rule, wildcards.group(1) if wildcards else ""))
    return jobs


def file_states(folder: Path) -> dict[str, tuple[str, int]]:
    """relative path -> (sha256, mtime in ns) of every file under `folder`."""
    return {
        str(path.relative_to(folder)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@contextmanager
def planned_dag(snakefile: Path, workdir: Path, configfile: Path, target: str, forceall: bool = False, cores: int = 2):
    """The workflow whose DAG `snakemake -n <target> --configfile <configfile>` builds, in this process (Snakemake's
    API, as DAGApi.printdag does): `workflow.dag` with its jobs, their needrun verdicts and reasons, and
    `workflow.persistence`. The working directory is restored after."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings, StorageSettings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cwd = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=cores, nodes=1000),
                config_settings=ConfigSettings(configfiles=[configfile]),
                storage_settings=StorageSettings(),
                snakefile=snakefile,
                workdir=workdir,
            )
            workflow_api.dag(dag_settings=DAGSettings(targets={target}, forceall=forceall))
            workflow = workflow_api._workflow
            workflow._prepare_dag(forceall=forceall, ignore_incomplete=forceall, lock_warn_only=True)
            workflow._build_dag()
            yield workflow
    finally:
        os.chdir(cwd)
        # the Snakefile froze the DAG's objects out of garbage collection (common.smk, build_dag_without_collecting):
        # this process plans again and again, so they go back to the collector
        gc.unfreeze()
