"""A study kind and a job kind are each one registered entry, added by a user's plugin (a config's `plugins:`,
careval.plugins) with no line of careval changed: tests/workflow/plugins/toy_kinds.py registers a toy metric family
and a toy study kind in a few lines each, and a study over them runs for real on the demo slice, through the run's
own rules (snakemake in a subprocess: the plan and every job import the plugin themselves).

The toy job kind is a metric family a benchmark entry asks for (`extra_metrics`): the run's scoring rule
(score_family) scores it with the plugin's scorer. The toy study kind sweeps a benchmark's prompt under a section of
its own; the schema takes any section name and the plan checks it against the registered kinds.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from workflow_runs import jobs_run, make_workdir, reduced_config, snakemake

from careval.metrics.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).with_name("plugins") / "toy_kinds.py"
SMOL = "smollm2-135m-instruct"
BENCHMARK = "demo_open_qa"
SHORT = "Answer in one line.\n\nQuestion: {question}\nAnswer:"
VARIANT = "prompt=short"
VPATH = f"studies/toy/{VARIANT}/"
TABLE = "results/studies/toy/sample_scores.parquet"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy_run(demo_model_dirs, tmp_path_factory):
    config = reduced_config(REPO, [SMOL], {BENCHMARK: {"limit": 2, "extra_metrics": ["toy_length"]}})
    config["plugins"] = ["toy_kinds.py"]  # a file beside the config, relative to the working directory
    config["studies"] = {
        "toy": {"models": [SMOL], "benchmarks": [BENCHMARK], "sweep": {"prompting": {"prompt": {"short": SHORT}}}}
    }
    # only the toy family is scored (every other family the registry has, the plugin's aside, is skipped)
    config["metrics"]["skip"] = [family for family in FAMILIES if family != "toy_length"]
    config["analysis"]["relaxed_perplexity_anchor"] = None
    work = make_workdir(REPO, tmp_path_factory.mktemp("toy") / "careval", config)
    shutil.copy(PLUGIN, work / "toy_kinds.py")
    result = snakemake(["--cores", "2", TABLE], work, timeout=600)
    assert result.returncode == 0, result.stderr[-5000:]
    return work, result.stdout + result.stderr


def test_a_toy_study_kind_over_a_toy_job_kind_runs_through_the_runs_own_rules(toy_run):
    work, log = toy_run
    jobs = [
        (rule, dict(p.split("=", 1) for p in wildcards.split(", ") if "=" in p)) for rule, wildcards in jobs_run(log)
    ]
    kinds = {(rule, w.get("vpath", ""), w.get("family", "")) for rule, w in jobs}
    # the variant's inference and its toy scoring are the run's own rules under the variant's folder, the baseline's
    # the same rules outside any study folder
    assert {("infer_open", VPATH, ""), ("score_family", VPATH, "toy_length")} <= kinds
    assert {("infer_open", "", ""), ("score_family", "", "toy_length")} <= kinds
    assert not [rule for rule, _ in jobs if re.search("toy|prompting", rule)]  # no rule named after either toy

    # the variant answered the toy study's prompt, the baseline the benchmark's own
    own = pl.read_parquet(work / f"results/{VPATH}generations/{SMOL}/{BENCHMARK}.parquet")
    run = pl.read_parquet(work / f"results/generations/{SMOL}/{BENCHMARK}.parquet")
    assert all(prompt.startswith("Answer in one line.") for prompt in own["prompt"])
    assert not any(prompt.startswith("Answer in one line.") for prompt in run["prompt"])

    # the toy family's values, in each variant's file and in the study's table, are its answers' lengths
    table = pl.read_parquet(work / TABLE).filter(pl.col("metric") == "toy_length")
    assert set(table["variant"]) == {VARIANT, "baseline"}
    for variant, answers, folder in ((VARIANT, own, VPATH), ("baseline", run, "")):
        lengths = {
            i: float(len(text)) for i, text, status in answers.select("id", "output", "status").rows() if status == "ok"
        }
        assert len(lengths) == 2, answers
        scores = pl.read_parquet(work / f"results/{folder}scores/{SMOL}/{BENCHMARK}/toy_length.parquet")
        assert dict(zip(scores["id"], scores["value"])) == lengths
        rows = table.filter(pl.col("variant") == variant)
        assert dict(zip(rows["id"], rows["value"])) == lengths, variant
