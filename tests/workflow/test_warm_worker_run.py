"""A local run with the warm worker writes the same bytes as one where every job is its own process, and its
jobs run in the worker: every job started there, the models loaded once, nothing heavy imported again."""

from __future__ import annotations

import re

import pytest
from workflow_runs import file_states, make_workdir, reduced_config, snakemake

pytestmark = pytest.mark.slow

MODELS = ["smollm2-135m-instruct", "gemma3-270m"]
BENCHMARKS = {"demo_mcqa": {"limit": 3}, "demo_open_qa": {"limit": 3}}
TARGET = "results/summary/scores.parquet"


def _run(repo_root, tmp_path_factory, warm: bool):
    config = reduced_config(repo_root, MODELS, dict(BENCHMARKS))
    config["resources"]["warm_worker"] = warm
    work = make_workdir(repo_root, tmp_path_factory.mktemp("warm" if warm else "cold") / "careval", config)
    result = snakemake(["--cores", "2", TARGET], work, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    return work, result.stdout + result.stderr


@pytest.fixture(scope="module")
def runs(repo_root, tmp_path_factory, demo_model_dirs):
    return _run(repo_root, tmp_path_factory, warm=True), _run(repo_root, tmp_path_factory, warm=False)


def test_the_warm_run_writes_the_bytes_of_a_run_without_the_worker(runs):
    (warm, _), (cold, _) = runs
    for stage in ("generations", "loglik", "scores", "summary"):
        hashes = {name: digest for name, (digest, _mtime) in file_states(warm / "results" / stage).items()}
        assert hashes, stage
        assert hashes == {name: digest for name, (digest, _mtime) in file_states(cold / "results" / stage).items()}
    assert not (cold / "results" / "logs" / "warm_worker.log").exists()


def test_every_job_of_the_warm_run_ran_in_the_worker_on_models_it_loaded_once(runs):
    (warm, log), _ = runs
    worker = (warm / "results" / "logs" / "warm_worker.log").read_text()
    jobs = len(re.findall(r"^(?:local)?rule \w+:", log, re.MULTILINE))
    assert len(re.findall(r": started \(pid \d+\)$", worker, re.MULTILINE)) == jobs
    assert len(re.findall(r": ended with status 0 after", worker)) == jobs
    loads = re.findall(r": model (\S+) \(.*\) ready in", worker)
    assert sorted(set(loads)) == sorted(MODELS)
    assert "; 1 thread(s): " in worker and "warning" not in worker  # nothing but the thread that forks
    # what the worker imported ahead, no job forked after its warm-up imported again
    for line in re.findall(r"imported by the job itself: (.*);", worker.partition("warmed up in")[2]):
        assert not {"torch", "transformers", "bert_score", "ot", "rouge_score", "prometheus_eval"} & set(
            line.split(", ")
        )
    assert "stopped" in worker
