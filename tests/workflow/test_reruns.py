"""One-model and one-benchmark changes rerun only their own jobs and the aggregate downstream:
every other model's (benchmark's) generations, log-likelihoods and scores stay byte-identical
and are not rewritten (same sha256, same mtime). Each case starts from a copy of one base run (the two-model
run of conftest.py, which test_warm_worker_run.py shares)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from workflow_runs import (
    SCORES as TARGET,
    TWO_BENCHMARKS as BENCHMARKS,
    TWO_MODEL_GROUP,
    TWO_MODELS,
    file_states,
    jobs_run,
    snakemake,
    write_config,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(TWO_MODEL_GROUP)]

KEPT, CHANGED = TWO_MODELS
STAGES = ("generations", "loglik", "scores")


def _jobs_of(jobs: set[tuple[str, str]], model: str, rename: str | None = None) -> set[tuple[str, str]]:
    """The jobs of one model (optionally as they would be named for another model)."""
    return {
        (rule, wildcards.replace(f"model={model},", f"model={rename or model},"))
        for rule, wildcards in jobs
        if f"model={model}," in wildcards
    }


def _states(work: Path, model: str, benchmarks=None) -> dict:
    """Fingerprints of a model's result files (optionally only those of some benchmarks)."""
    states = {}
    for stage in STAGES:
        for name, state in file_states(work / "results" / stage / model).items():
            if benchmarks is None or Path(name).parts[0].removesuffix(".parquet") in benchmarks:
                states[f"{stage}/{name}"] = state
    return states


@pytest.fixture(scope="module")
def base_run(two_model_run):
    """The shared two-model run (conftest.py) and the jobs it ran."""
    work = two_model_run.work
    assert len(_states(work, KEPT)) >= 2 + 2 + 2  # both benchmarks: generations, loglik, scores
    jobs = jobs_run(two_model_run.log)
    assert len(_jobs_of(jobs, KEPT)) >= 4  # an inference and a scoring job per benchmark
    return work, two_model_run.config, jobs


@pytest.fixture
def copy_of(base_run, tmp_path):
    """A copy of the base run (mtimes kept, .snakemake metadata included), its config and jobs."""
    work, config, jobs = base_run
    work_copy = tmp_path / "careval"
    shutil.copytree(work, work_copy, symlinks=True)
    # a deep copy, not a YAML round trip: that would sort the keys, and Snakemake compares a job's
    # params in order, so a reordered model entry counts as changed (and reruns that model)
    return work_copy, copy.deepcopy(config), jobs


def _rerun(work: Path, *args: str) -> set[tuple[str, str]]:
    result = snakemake(["--cores", "2", TARGET, *args], work, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    return jobs_run(result.stdout + result.stderr)


def test_adding_a_model_runs_only_its_jobs(copy_of, repo_root):
    work, _, base_jobs = copy_of
    before = _states(work, KEPT) | _states(work, CHANGED)
    # the README's way: an extra config file on top of config/config.yaml; KEPT's weights, another name
    added = {
        "models": {
            "smollm2-again": {
                "source": f"local:{repo_root / 'resources/models' / KEPT}",
                "chat_template": True,
                "batch_size": 16,
            }
        }
    }
    (work / "config" / "added.yaml").write_text(yaml.safe_dump(added))
    jobs = _rerun(work, "--configfile", "config/config.yaml", "config/added.yaml")
    assert jobs == _jobs_of(base_jobs, KEPT, rename="smollm2-again") | {("aggregate_scores", "")}
    assert _states(work, KEPT) | _states(work, CHANGED) == before
    summary = pl.read_parquet(work / TARGET)
    assert sorted(summary["model"].unique()) == sorted([KEPT, CHANGED, "smollm2-again"])
    # the same weights and settings as KEPT: the same generations
    assert (
        pl.read_parquet(work / "results/generations/smollm2-again/demo_open_qa.parquet")["output"].to_list()
        == pl.read_parquet(work / f"results/generations/{KEPT}/demo_open_qa.parquet")["output"].to_list()
    )


def test_replacing_a_model_reruns_only_its_jobs(copy_of, repo_root):
    work, config, base_jobs = copy_of
    kept, changed = _states(work, KEPT), _states(work, CHANGED)
    old_outputs = pl.read_parquet(work / f"results/generations/{CHANGED}/demo_open_qa.parquet")["output"]
    # other weights under the same name (here Qwen2.5-Coder-0.5B-Instruct's): the entry changed
    config["models"][CHANGED] = {
        "source": f"local:{repo_root / 'resources/models/qwen2.5-coder-0.5b-instruct'}",
        "chat_template": True,
        "batch_size": 16,
    }
    write_config(work, config)
    jobs = _rerun(work)
    assert jobs == _jobs_of(base_jobs, CHANGED) | {("aggregate_scores", "")}
    assert _states(work, KEPT) == kept
    rewritten = _states(work, CHANGED)
    assert rewritten.keys() == changed.keys()
    assert all(rewritten[name][1] > changed[name][1] for name in changed)  # every file written anew
    new_outputs = pl.read_parquet(work / f"results/generations/{CHANGED}/demo_open_qa.parquet")["output"]
    assert new_outputs.to_list() != old_outputs.to_list()  # really the other model's generations


def test_rerunning_one_model_reruns_only_its_jobs(copy_of):
    work, _, base_jobs = copy_of
    kept = _states(work, KEPT)
    # the README's way: delete every result of the model (`rm -r results/*/<model>`) and type the same command:
    # the files a job read that are gone are made again (careval.results_check), and with them the model's jobs that
    # read no inference output (relaxed perplexity, consistency samples)
    for folder in (work / "results").glob(f"*/{CHANGED}"):
        shutil.rmtree(folder)
    jobs = _rerun(work)
    assert jobs == _jobs_of(base_jobs, CHANGED) | {("aggregate_scores", "")}
    assert _states(work, KEPT) == kept


def test_adding_a_benchmark_runs_only_its_jobs(copy_of):
    work, config, _ = copy_of
    before = {model: _states(work, model) for model in (KEPT, CHANGED)}
    config["benchmarks"]["demo_note"] = {"limit": 2}
    write_config(work, config)
    jobs = _rerun(work)
    assert ("normalise_benchmark", "benchmark=demo_note") in jobs and ("aggregate_scores", "") in jobs
    # nothing else but demo_note's jobs: at least an inference and a scoring job per model
    assert all(wildcards.endswith("benchmark=demo_note") for rule, wildcards in jobs if rule != "aggregate_scores")
    for model in (KEPT, CHANGED):
        assert len(_jobs_of(jobs, model)) >= 2
        assert _states(work, model, benchmarks=set(BENCHMARKS)) == before[model]
    summary = pl.read_parquet(work / TARGET)
    assert "demo_note" in set(summary["benchmark"])


def test_a_deleted_or_cut_short_intermediate_is_made_again_and_a_stale_file_is_marked(copy_of):
    """Issue 40: a deleted score file stayed gone ("Nothing to be done"), a parquet file cut short failed the next
    job with polars' "File out of specification" naming no file, and an earlier config's files lay beside the new
    ones unmarked. The same command now makes both again (the same bytes) and names each; the index marks the rest."""
    work, _, _ = copy_of
    deleted = f"results/scores/{KEPT}/demo_mcqa/accuracy.parquet"
    cut = f"results/scores/{CHANGED}/demo_mcqa/accuracy.parquet"
    stale = f"results/scores/{KEPT}/demo_open_qa/bleurt.parquet"  # BLEURT is skipped: an earlier config's file
    before = {path: file_states(work / path.rsplit("/", 1)[0])[path.rsplit("/", 1)[1]][0] for path in (deleted, cut)}
    shutil.copy(work / deleted, work / stale)
    (work / deleted).unlink()
    data = (work / cut).read_bytes()
    (work / cut).write_bytes(data[: len(data) // 2])
    result = snakemake(["--cores", "2", TARGET], work, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    lines = (result.stdout + result.stderr).splitlines()
    assert f"careval: {cut}: cut short (no PAR1 at its end); it is made again, with the jobs after it" in lines
    assert (
        f"careval: {deleted} is gone (it was read to make results/summary/judge_verdicts.parquet); it is made again"
        in lines
    )
    assert (
        "careval warning: 1 file(s) under the results folder are not made by this config (left by an earlier one): "
        f"{stale}; results/index.tsv marks them stale" in lines
    )
    # the two scoring jobs and the summary, nothing else; their files as the first run wrote them
    assert jobs_run(result.stdout + result.stderr) == {
        ("score_mcqa", f"model={KEPT}, benchmark=demo_mcqa"),
        ("score_mcqa", f"model={CHANGED}, benchmark=demo_mcqa"),
        ("aggregate_scores", ""),
    }
    for path, digest in before.items():
        assert file_states(work / path.rsplit("/", 1)[0])[path.rsplit("/", 1)[1]][0] == digest
    index = dict(line.split("\t") for line in (work / "results/index.tsv").read_text().splitlines()[1:])
    assert index[deleted] == index[cut] == index[TARGET] == "made"
    assert index[stale] == "stale" and index[f"results/generations/{KEPT}/demo_open_qa.parquet"] == "kept"
    # and a second time: nothing to do (a dry run plans as a run does), the stale file still named
    again = snakemake(["-n", "--cores", "2", TARGET], work, timeout=300)
    assert "Nothing to be done" in again.stdout + again.stderr and "careval: " not in again.stdout + again.stderr


def test_a_dataset_kept_after_snakemakes_records_were_deleted_is_made_again_when_its_settings_changed(copy_of):
    """`rm -rf results .snakemake` keeps resources/datasets: Snakemake, without its records, would keep a dataset
    normalised at the old limit for the new one ("Nothing to be done" on a finished run). Its report names the job
    that made it, so the changed benchmark, and only it, is normalised again."""
    work, config, _ = copy_of
    shutil.rmtree(work / ".snakemake")
    unchanged = snakemake(["-n", "--cores", "2", TARGET], work, timeout=300)
    assert "Nothing to be done" in unchanged.stdout, unchanged.stdout[-3000:]
    config["benchmarks"]["demo_open_qa"]["limit"] += 1
    write_config(work, config)
    result = snakemake(["-n", "--cores", "2", TARGET], work, timeout=300)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    dataset = f"{config['datasets_dir']}/demo_open_qa.parquet"
    assert f"careval: {dataset} was normalised under other settings; it is made again" in log.splitlines()
    normalised = {wildcards for rule, wildcards in jobs_run(result.stdout) if rule == "normalise_benchmark"}
    assert normalised == {"benchmark=demo_open_qa"}, log[-3000:]
