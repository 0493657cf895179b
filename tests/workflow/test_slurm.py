"""The project's slurm profile against a live single-node SLURM cluster (tests/slurm/cluster.sh):
a reduced demo DAG goes through sbatch job by job, asks for GPUs where a model is loaded, gives
the same results as a local run, and a failing job stops the run naming its rule, log and state.

The local run is the workflow tests' shared two-model run (conftest.py): its SmolLM2 jobs are this DAG's
(same benchmarks, limits and judge), so its files of SmolLM2, and its tables' SmolLM2 rows, are what
SLURM must write."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal
from workflow_runs import (
    TWO_MODEL_GROUP,
    TWO_MODELS,
    jobs_run,
    make_workdir,
    snakemake,
    two_model_config,
    write_config,
)

# xdist_group: one single-node SLURM on the machine (fixed ports, one state folder); the group of the shared
# two-model run, this file's local run (its worker builds that run once)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(TWO_MODEL_GROUP)]

CLUSTER = Path(__file__).resolve().parents[1] / "slurm" / "cluster.sh"
# snakemake with the plugin's poll interval held at the profile's first delay (the module says why)
SNAKEMAKE_ON_SLURM = (sys.executable, str(CLUSTER.with_name("snakemake_steady_polls.py")))
TARGET = "results/summary/scores.parquet"
MODEL = TWO_MODELS[0]  # SmolLM2
# A size class with one GPU: the test node advertises one (a /dev/null-backed GRES), so the
# inference jobs' --gpus=1 is scheduled as on a GPU node while the model runs on the CPU.
GPU_SIZE = {"gpu_node": {"gpus": 1, "mem_mb": 3100, "runtime": 20}}  # 3100: no CPU rule asks for that
LLM_MEM = f"{GPU_SIZE['gpu_node']['mem_mb']}M"
LLM_RULES = {"infer_open", "infer_closed", "judge", "relaxed_perplexity", "sample_consistency", "rephrase"}


@pytest.fixture(scope="module")
def slurm_cluster():
    if shutil.which("slurmctld") is None or shutil.which("sbatch") is None:
        pytest.skip("slurmctld/sbatch not installed (CI installs slurmctld slurmd slurm-client munge)")
    was_up = subprocess.run(["bash", str(CLUSTER), "status"], capture_output=True).returncode == 0
    up = subprocess.run(["bash", str(CLUSTER), "up"], capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, f"cluster did not start:\n{up.stdout}\n{up.stderr}"
    # the test cluster's own slurm.conf, for snakemake, the plugin's sbatch/squeue and the jobs
    conf = re.search(r"^export SLURM_CONF=(\S+)$", up.stdout, re.MULTILINE).group(1)
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    yield
    if previous is None:
        del os.environ["SLURM_CONF"]
    else:
        os.environ["SLURM_CONF"] = previous
    if not was_up:  # leave a cluster someone else started running
        subprocess.run(["bash", str(CLUSTER), "down"], capture_output=True, timeout=60)


def _test_config(repo: Path) -> dict:
    config = two_model_config(repo, (MODEL,))
    config["model_sizes"] = GPU_SIZE
    config["models"][MODEL]["size"] = "gpu_node"
    return config


def _site_profile(work: Path) -> None:
    """Adapt the copied profile as the README tells a site to: partition, status command."""
    path = work / "slurm" / "config.v8+.yaml"
    profile = yaml.safe_load(path.read_text())
    profile["default-resources"]["slurm_partition"] = "debug"
    # no accounting daemon on the test cluster, so no sacct; squeue sees finished jobs for
    # MinJobAge=600 s, far above the plugin's 3 x first-poll-delay threshold
    profile["slurm-status-command"] = "squeue"
    profile["slurm-init-seconds-before-status-checks"] = 2
    profile["latency-wait"] = 5
    path.write_text(yaml.safe_dump(profile))


def _submitted(log: str) -> dict[str, str]:
    """SLURM job id -> what it ran, from the plugin's 'submitted' lines: 'rule_<rule>' for one
    job, 'group_llm_<model>_<rule>_<rule>...' for a group of one model's LLM jobs."""
    found = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/((?:rule|group)_[^/]+)/", log)
    return dict(found)


def _rules_in(submission: str, rules: set[str]) -> set[str]:
    if submission.startswith("rule_"):
        return {submission.removeprefix("rule_")} & rules
    return {rule for rule in rules if submission.endswith(f"_{rule}") or f"_{rule}_" in submission}


def _scontrol(jobid: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", "-o", jobid], capture_output=True, text=True, check=True).stdout
    return dict(item.split("=", 1) for item in out.split() if "=" in item)


def _results(work: Path) -> dict[str, pl.DataFrame]:
    """MODEL's result files, and its rows of the tables of every model (a `model` column)."""
    others = set(TWO_MODELS) - {MODEL}
    results = {}
    for path in sorted((work / "results").rglob("*.parquet")):
        if others & set(path.relative_to(work).parts):
            continue
        frame = pl.read_parquet(path)
        results[str(path.relative_to(work))] = frame.filter(pl.col("model") == MODEL) if "model" in frame else frame
    return results


@pytest.fixture(scope="module")
def local_run(two_model_run):
    """The shared local run (warm worker, no size class: a CPU machine's run) and the jobs it ran."""
    return two_model_run.work, jobs_run(two_model_run.log)


@pytest.fixture(scope="module")
def slurm_run(repo_root, tmp_path_factory, demo_model_dirs, slurm_cluster):
    work = make_workdir(
        repo_root, tmp_path_factory.mktemp("slurm") / "careval", _test_config(repo_root), profiles=("slurm",)
    )
    _site_profile(work)
    # the README's cluster command, as written (its snakemake polling steadily: SNAKEMAKE_ON_SLURM)
    result = snakemake(["--profile", "slurm", TARGET], work, timeout=900, program=SNAKEMAKE_ON_SLURM)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    return work, result.stdout + result.stderr


def _after_the_slurm_run(slurm_run, folder: Path, config: dict, jobs: list[tuple[str, str]]) -> Path:
    """A copy of the SLURM run's folder (mtimes and Snakemake's records kept) with `config`, for a test of a few more
    of MODEL's jobs on SLURM: its benchmarks, normalised on SLURM by that run under the same settings, are not made
    again, so the only SLURM jobs are those under test (a fresh folder made both datasets first, two more SLURM jobs
    of a minute each). The copy keeps no request cache (every request of a job is computed, as in a fresh folder) and
    no log of the (rule, benchmark) `jobs` to run, so each log the test reads is the new job's alone."""
    work = folder / "careval"
    shutil.copytree(slurm_run[0], work, symlinks=True)
    assert "cache_dir" not in config["resources"]  # the schema's default, resources/cache in the run's folder
    shutil.rmtree(work / "resources" / "cache", ignore_errors=True)
    for rule, benchmark in jobs:
        (work / "results" / "logs" / rule / MODEL / f"{benchmark}.log").unlink()
    write_config(work, config)
    return work


def test_every_job_goes_through_sbatch_and_completes(slurm_run, local_run):
    work, log = slurm_run
    _, local_jobs = local_run
    rules = {rule for rule, _ in local_jobs}
    # at least one generation, one scoring and one aggregation job
    assert {"normalise_benchmark", "infer_open", "infer_closed", "aggregate_scores"} <= rules
    assert any(rule.startswith("score_") for rule in rules)
    submitted = _submitted(log)
    ran = [rule for submission in submitted.values() for rule in _rules_in(submission, rules)]
    assert sorted(set(ran)) == sorted(rules)
    for jobid, submission in submitted.items():
        job = _scontrol(jobid)  # slurmctld's own record of the job
        assert job["JobState"] == "COMPLETED", (submission, job)
        assert job["Comment"].startswith("rule_" + submission.removeprefix("rule_").removeprefix("group_")), job
        assert job["Partition"] == "debug"
        assert job["WorkDir"] == str(work)


def _model_group(log: str) -> tuple[str, str]:
    """(SLURM job id, submission) of the group of MODEL's LLM jobs."""
    groups = [(jobid, s) for jobid, s in _submitted(log).items() if s.startswith(f"group_llm_{MODEL}_")]
    assert len(groups) == 1, groups
    return groups[0]


def test_one_models_inference_jobs_share_one_slurm_job(slurm_run):
    """The profile's group-components: the model's inference jobs (both benchmarks) in one allocation."""
    _, log = slurm_run
    _, submission = _model_group(log)
    assert {"infer_open", "infer_closed"} <= _rules_in(submission, LLM_RULES), submission


def _minutes(limit: str) -> int:
    hours, minutes, _ = (int(part) for part in limit.split(":"))
    return 60 * hours + minutes


def test_llm_jobs_ask_for_the_gpus_of_their_size_class_and_others_for_none(slurm_run, local_run):
    work, log = slurm_run
    for jobid, submission in _submitted(log).items():
        job = _scontrol(jobid)
        gres = job.get("TresPerJob", "") + job.get("TresPerNode", "")
        if _rules_in(submission, LLM_RULES):
            assert "gpu:1" in gres and job["MinMemoryNode"] == LLM_MEM, (submission, job)
        else:
            assert "gpu" not in gres and job["MinMemoryNode"] != LLM_MEM, (submission, job)
    # the group's jobs run one after the other: one job's GPU and memory, the runtimes summed
    jobid, submission = _model_group(log)
    grouped = [
        job for job in local_run[1] if job[0] in _rules_in(submission, LLM_RULES) and f"model={MODEL}," in job[1]
    ]
    assert len(grouped) >= 2 and _minutes(_scontrol(jobid)["TimeLimit"]) == GPU_SIZE["gpu_node"]["runtime"] * len(
        grouped
    )
    # the job handed the resolved GPU count on to the backend spec; one load per inference job
    for rule, benchmark in (("infer_open", "demo_open_qa"), ("infer_closed", "demo_mcqa")):
        text = (work / "results" / "logs" / rule / MODEL / f"{benchmark}.log").read_text()
        assert text.count(f"loaded model {MODEL} (hf, gpus=1, dtype=") == 1, text[-2000:]


def test_slurm_results_equal_a_local_run(slurm_run, local_run):
    work, _ = slurm_run
    on_slurm, local = _results(work), _results(local_run[0])
    assert sorted(on_slurm) == sorted(local)
    assert any(name.startswith("results/generations/") for name in local)
    for name, frame in local.items():
        assert_frame_equal(on_slurm[name], frame, check_exact=True)


def test_a_failing_job_names_its_rule_log_and_slurm_state(repo_root, tmp_path, demo_model_dirs, slurm_run):
    """A job that fails on its node: the model's weights are cut short, which no check at the door reads
    (a corrupt benchmark file is stopped there, before any job: tests/reliability/test_checked_at_the_door.py), so the
    model's inference job fails when it loads them. Run in a copy of the SLURM run's folder: the model's weights
    changed, so its inference job runs again (and its earlier output is gone), nothing else."""
    broken = tmp_path / "broken-model"
    broken.mkdir()
    for part in demo_model_dirs[MODEL].iterdir():  # the model's other files as they are; its weights cut short
        if part.name != "model.safetensors":
            (broken / part.name).symlink_to(part)
    with (demo_model_dirs[MODEL] / "model.safetensors").open("rb") as weights:
        (broken / "model.safetensors").write_bytes(weights.read(4096))
    config = _test_config(repo_root)
    config["models"][MODEL]["source"] = f"local:{broken}"
    work = _after_the_slurm_run(slurm_run, tmp_path, config, [("infer_closed", "demo_mcqa")])
    result = snakemake(
        ["--profile", "slurm", f"results/loglik/{MODEL}/demo_mcqa.parquet"],
        work,
        timeout=600,
        program=SNAKEMAKE_ON_SLURM,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 1, log[-5000:]  # snakemake's own failure, not the timeout's 124
    job_log = f"results/logs/infer_closed/{MODEL}/demo_mcqa.log"
    assert "rule infer_closed" in log and job_log in log, log[-5000:]
    assert "safetensors" in (work / job_log).read_text()
    # SLURM saw the model's job fail; stopped cleanly: nothing of this run is left queued or running,
    # no output of the failed job was written
    submitted = _submitted(log)
    failed = [jobid for jobid, submission in submitted.items() if "infer_closed" in submission]
    assert len(failed) == 1 and _scontrol(failed[0])["JobState"] == "FAILED", submitted
    for jobid in submitted:
        assert _scontrol(jobid)["JobState"] not in {"PENDING", "RUNNING"}
    assert not (work / "results" / "loglik" / MODEL / "demo_mcqa.parquet").exists()


def test_a_shared_engine_and_the_jobs_it_serves_are_one_allocation(repo_root, tmp_path, slurm_run):
    """engine: shared through the profile: the model's vllm_engine job and its LLM jobs go to SLURM as
    one job, which asks for the model's GPU once (the served jobs ask for none), the model's memory
    plus engine_client_mem_mb per served job, and the model's runtime (they run at once: not summed).
    The server is the stand-in of tests/backends/fake_vllm (no vLLM here; the real one runs in
    tests/backends/test_vllm_service.py), started through engine_python. Run in a copy of the SLURM run's folder: the
    model's backend changed, so its inference jobs run again, nothing else."""
    fake = repo_root / "tests" / "backends" / "fake_vllm"
    python = tmp_path / "python-with-fake-vllm"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={fake} OMP_NUM_THREADS=1 exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    config = _test_config(repo_root)
    config["models"][MODEL].update(backend="vllm", engine="shared", engine_python=str(python), dtype="float32")
    config["analysis"]["model_sets"] = {"demo": [MODEL]}  # the demo's sets name its three models
    work = _after_the_slurm_run(
        slurm_run, tmp_path, config, [("infer_closed", "demo_mcqa"), ("infer_open", "demo_open_qa")]
    )
    targets = [f"results/loglik/{MODEL}/demo_mcqa.parquet", f"results/generations/{MODEL}/demo_open_qa.parquet"]
    result = snakemake(["--profile", "slurm", *targets], work, timeout=900, program=SNAKEMAKE_ON_SLURM)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    jobid, submission = _model_group(log)
    assert _rules_in(submission, LLM_RULES | {"vllm_engine"}) == {"vllm_engine", "infer_open", "infer_closed"}
    assert [s for s in _submitted(log).values() if "vllm_engine" in s or "infer_" in s] == [submission]
    job = _scontrol(jobid)
    gres = job.get("TresPerJob", "") + job.get("TresPerNode", "")
    client_mb = yaml.safe_load((repo_root / "workflow" / "schemas" / "config.schema.yaml").read_text())["properties"][
        "resources"
    ]["properties"]["engine_client_mem_mb"]["default"]
    assert "gpu:1" in gres and job["MinMemoryNode"] == f"{GPU_SIZE['gpu_node']['mem_mb'] + 2 * client_mb}M", job
    assert _minutes(job["TimeLimit"]) == GPU_SIZE["gpu_node"]["runtime"]
    logs = work / "results" / "logs"
    assert (logs / "vllm_engine" / f"{MODEL}.log").read_text().count("engine: started vLLM server") == 1
    for rule, benchmark in (("infer_open", "demo_open_qa"), ("infer_closed", "demo_mcqa")):
        text = (logs / rule / MODEL / f"{benchmark}.log").read_text()
        assert (
            f"using the shared vLLM engine of {MODEL}" in text and f"loaded model {MODEL} (vllm, gpus=0, dtype=" in text
        )
