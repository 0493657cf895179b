"""Benchmark: planning the paper's whole study (config/paper.yaml) offline, its time and job count."""

import os
import re
import subprocess
import time

import pytest
import yaml
from workflow_runs import ENV, SNAKEMAKE, make_workdir

from careval.datasets import get_benchmark

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
    assert stats["normalise_benchmark"] == len(names)
    assert stats["infer_open"] == n_models * n_generating
    assert stats["infer_closed"] == n_models * (len(names) - n_generating)
    for task in {entry.task for entry in entries}:
        assert stats[f"score_{task}"] == n_models * sum(entry.task == task for entry in entries)
    print(
        f"\npaper plan ({'no network: unshare -rn' if prefix else 'offline env vars only'}): {n_models} models x "
        f"{len(names)} benchmarks -> {stats['total']} jobs planned in {elapsed:.1f}s (goal: under 10 s); {stats}"
    )
