"""careval as a Snakemake module (issue 47): a workflow of its own, in a temporary folder, loads careval's Snakefile
with `module careval: snakefile: ...; config: config` and `use rule * from careval`, as `snakedeploy deploy-workflow`
writes it, and runs the demo slice through it with its own config."""

from __future__ import annotations

import re

import polars as pl
import pytest
import yaml
from workflow_runs import SCORES, make_workdir, reduced_config, snakemake

pytestmark = pytest.mark.slow

MODEL = "smollm2-135m-instruct"
BENCHMARKS = {"demo_mcqa": {"limit": 2}, "demo_open_qa": {"limit": 2}}

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


def test_a_workflow_uses_careval_as_a_module(repo_root, tmp_path, demo_model_dirs):
    config = reduced_config(repo_root, [MODEL], {name: dict(entry) for name, entry in BENCHMARKS.items()})
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

    # the summary of the module's run, in the host's folder: every metric of the slice's one model on its two
    # samples per benchmark (a failed sample would show in n_failed)
    scores = pl.read_parquet(host / SCORES)
    assert set(scores["model"]) == {MODEL} and set(scores["benchmark"]) == set(BENCHMARKS)
    acc = scores.filter((pl.col("benchmark") == "demo_mcqa") & (pl.col("metric") == "acc"))
    assert acc["n"].to_list() == [2] and 0 <= acc["value"][0] <= 1
    judged = scores.filter(pl.col("metric").str.starts_with("judge_") & (pl.col("benchmark") == "demo_open_qa"))
    assert judged.height > 0 and (judged["n"] + judged["n_failed"] == 2).all()
    assert not (host / "resources" / "models").exists()  # the config's models are read where they are
