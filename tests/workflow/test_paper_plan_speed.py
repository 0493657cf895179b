"""Benchmark: planning the paper's whole study (config/paper.yaml) offline, its time and job count; and the paper
config with each model entered five times (the size of a leaderboard): its jobs five times the model jobs, its CPU
seconds linear in its jobs (the per-job cost printed)."""

import os
import re
import resource
import subprocess
import time

import pytest
import yaml
from workflow_runs import ENV, SNAKEMAKE, make_workdir

from careval.datasets import get_benchmark
from careval.plan import build_plan

pytestmark = pytest.mark.benchmark


def _job_stats(log: str) -> dict[str, int]:
    table = log[log.index("Job stats:") :].split("\n\n")[0]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


def _no_network_prefix() -> list[str]:
    """`unshare -rn` (a new user and network namespace: no network at all) where the kernel allows it."""
    try:
        ok = subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        ok = False
    return ["unshare", "-rn"] if ok else []


def test_paper_study_plans_offline_and_fast(tmp_path, repo_root):
    config = yaml.safe_load((repo_root / "config" / "paper.yaml").read_text())
    # paper.yaml as the workdir's config/config.yaml: nothing of the demo config merges into it
    work = make_workdir(repo_root, tmp_path / "work", config)
    prefix = _no_network_prefix()
    command = [*prefix, "timeout", "-k", "10", "300", SNAKEMAKE, "results/correlations.pdf", "-n", "--quiet", "all"]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=work, env={**os.environ, **ENV}, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-3000:]
    stats = _job_stats(result.stdout + result.stderr)

    n_models, names = len(config["models"]), list(config["benchmarks"])
    entries = [get_benchmark(name, config["benchmarks"][name]) for name in names]
    n_generating = sum(entry.generates for entry in entries)
    # and the studies' own inference jobs (a variant's job equal to the run's is the run's)
    studies = build_plan(config).studies.values()
    own = [benchmark for study in studies if study.kind == "model" for _, _, benchmark, _ in study.own_jobs()]
    own_generating = sum(get_benchmark(name, config["benchmarks"][name]).generates for name in own)
    assert stats["normalise_benchmark"] == len(names)
    assert stats["infer_open"] == n_models * n_generating + own_generating
    assert stats["infer_closed"] == n_models * (len(names) - n_generating) + len(own) - own_generating
    for task in {entry.task for entry in entries}:
        assert stats[f"score_{task}"] == n_models * sum(entry.task == task for entry in entries)
    print(
        f"\npaper plan ({'no network: unshare -rn' if prefix else 'offline env vars only'}): {n_models} models x "
        f"{len(names)} benchmarks -> {stats['total']} jobs planned in {elapsed:.1f}s; {stats}"
    )


def _planned(work, prefix: list[str]) -> tuple[dict[str, int], float]:
    """The job counts of `snakemake -n` in `work` and the CPU seconds (user + sys) it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [*prefix, "timeout", "-k", "10", "900", SNAKEMAKE, "results/correlations.pdf", "-n", "--quiet", "all"]
    result = subprocess.run(command, cwd=work, env={**os.environ, **ENV}, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 0, result.stderr[-3000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return _job_stats(result.stdout + result.stderr), cpu


def test_the_paper_plan_with_each_model_five_times_is_linear_in_its_jobs(tmp_path, repo_root):
    config = yaml.safe_load((repo_root / "config" / "paper.yaml").read_text())
    five = dict(config, models=dict(config["models"]))
    for k in range(2, 6):
        for name, entry in config["models"].items():
            five["models"][f"{name}-r{k}"] = {**entry, "label": f"{entry.get('label', name)}-r{k}"}
    prefix = _no_network_prefix()
    one, cpu_one = _planned(make_workdir(repo_root, tmp_path / "one", config), prefix)
    many, cpu_many = _planned(make_workdir(repo_root, tmp_path / "five", five), prefix)
    # every job of an evaluated model is there five times (the chat-template study covers every model too)
    for rule in ("infer_open", "infer_closed", "score_mcqa", "score_open", "relaxed_perplexity", "judge"):
        assert many[rule] == 5 * one[rule], rule
    assert many["normalise_benchmark"] == one["normalise_benchmark"]
    per_job = (cpu_many - cpu_one) / (many["total"] - one["total"])
    print(
        f"\npaper plan: {one['total']} jobs {cpu_one:.1f} s CPU; each model five times: {many['total']} jobs "
        f"{cpu_many:.1f} s CPU (goal 30 s); {1000 * per_job:.2f} ms of CPU per job, "
        f"{cpu_one - one['total'] * per_job:.1f} s besides (load {os.getloadavg()[0]:.1f})"
    )
