"""careval as a Snakemake module (issue 47): a workflow of its own, in a temporary folder, loads careval's Snakefile
with `module careval: snakefile: ...; config: config` and `use rule * from careval`, as `snakedeploy deploy-workflow`
writes it, and runs the demo slice through it with its own config: SmolLM2's part of the shared two-model run
(workflow_runs.run_two_models), whose files it must reproduce exactly."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal
from workflow_runs import SCORES, TWO_MODEL_GROUP, TWO_MODELS, make_workdir, snakemake, two_model_config

# the group of the shared two-model run (its worker builds that run once; tests/workflow/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(TWO_MODEL_GROUP)]

MODEL = TWO_MODELS[0]  # SmolLM2

# what snakedeploy deploy-workflow writes into workflow/Snakefile (its `github(...)` is a path here)
HOST_SNAKEFILE = """configfile: "config/config.yaml"


module careval:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from careval
"""

# a job in snakemake's log: `rule` or `localrule` and its indented lines; a dry run prints the jobs of a group
# (llm_<model>) indented under their `group job` line, a local run each job at the margin
_JOB = re.compile(r"^( *)(?:local)?rule (\w+):\n((?:\1    .*\n)*)", re.MULTILINE)


def jobs_run(log: str) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job a run started or a dry run planned."""
    jobs = set()
    for _, rule, body in _JOB.findall(log):
        wildcards = re.search(r"^ *wildcards: (.*)$", body, re.MULTILINE)
        jobs.add((rule, wildcards.group(1) if wildcards else ""))
    return jobs


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


def test_a_workflow_uses_careval_as_a_module(repo_root, tmp_path, demo_model_dirs, two_model_run):
    config = two_model_config(repo_root, (MODEL,))
    # the shared run's request cache: the module's jobs are the same calls, answered from it (a cached rerun's files
    # equal a computed run's, byte for byte: tests/backends/test_cached.py), so the module's plumbing is what runs
    config["resources"]["cache_dir"] = str(two_model_run.work / "resources" / "cache")
    host = tmp_path / "my-evaluation"
    (host / "workflow").mkdir(parents=True)
    (host / "config").mkdir()
    (host / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (host / "workflow" / "Snakefile").write_text(HOST_SNAKEFILE.format(snakefile=repo_root / "Snakefile"))

    # the jobs careval's own Snakefile plans for the same config: what the module run must run, no more, no less
    plain = make_workdir(repo_root, tmp_path / "careval", config)
    planned = snakemake(["-n", "--cores", "2", SCORES], plain, timeout=300)
    assert planned.returncode == 0, planned.stderr[-3000:]
    expected = jobs_run(planned.stdout + planned.stderr)
    assert {rule for rule, _ in expected} >= {"infer_closed", "infer_open", "judge", "relaxed_perplexity"}

    result = snakemake(["--cores", "2", SCORES], host, timeout=900)  # snakemake finds workflow/Snakefile
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    assert jobs_run(log) == expected
    assert not (host / "resources" / "models").exists()  # the config's models are read where they are

    # every file of the module's run, in the host's folder, is SmolLM2's part of careval's own run of the slice
    # (generations, log-likelihoods, every score, the judge's grades, the summary's rows), value for value
    in_module, own = _results(host), _results(two_model_run.work)
    assert sorted(in_module) == sorted(own)
    assert SCORES in own and any(name.startswith("results/generations/") for name in own)
    for name, frame in own.items():
        assert_frame_equal(in_module[name], frame, check_exact=True)
    scores = in_module[SCORES]
    assert set(scores["model"]) == {MODEL} and scores.filter(pl.col("metric").str.starts_with("judge_")).height > 0
