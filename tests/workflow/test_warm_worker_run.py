"""A local run with the warm worker writes the same bytes as one where every job is its own process, and its
jobs run in the worker: every job started there, the models loaded once, nothing heavy imported again."""

from __future__ import annotations

import re

import pytest
from workflow_runs import TWO_MODEL_GROUP, TWO_MODELS, file_states, run_two_models

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(TWO_MODEL_GROUP)]


@pytest.fixture(scope="module")
def runs(repo_root, tmp_path_factory, two_model_run):
    """(the shared two-model run with the warm worker, the same run without it): (work, snakemake's log) each."""
    cold = run_two_models(repo_root, tmp_path_factory.mktemp("cold"), warm=False)
    return (two_model_run.work, two_model_run.log), (cold.work, cold.log)


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
    assert sorted(set(loads)) == sorted(TWO_MODELS)
    assert "; 1 thread(s): " in worker and "warning" not in worker  # nothing but the thread that forks
    # what the worker imported ahead, no job forked after its warm-up imported again
    for line in re.findall(r"imported by the job itself: (.*);", worker.partition("warmed up in")[2]):
        assert not {"torch", "transformers", "bert_score", "ot", "rouge_score", "prometheus_eval"} & set(
            line.split(", ")
        )
    assert "stopped" in worker
