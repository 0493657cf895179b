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
TOYS = ("toy_length", "toy_reference_loglik")  # scored from the answers (score_family); run by the model (llm_family)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy_run(demo_model_dirs, tmp_path_factory):
    config = reduced_config(REPO, [SMOL], {BENCHMARK: {"limit": 2, "extra_metrics": list(TOYS)}})
    config["plugins"] = ["toy_kinds.py"]  # a file beside the config, relative to the working directory
    config["studies"] = {
        "toy": {"models": [SMOL], "benchmarks": [BENCHMARK], "sweep": {"prompting": {"prompt": {"short": SHORT}}}}
    }
    # only the toy families are scored (every other family the registry has is skipped)
    config["metrics"]["skip"] = [family for family in FAMILIES if family not in TOYS]
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
    for vpath in (VPATH, ""):
        assert {("infer_open", vpath, ""), ("score_family", vpath, "toy_length")} <= kinds
        assert ("llm_family", vpath, "toy_reference_loglik") in kinds
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


def test_a_toy_llm_run_family_is_the_models_log_likelihood_of_the_reference_after_each_variants_prompt(toy_run):
    """The runner's values in each variant's file are the log-likelihoods the variant's inference job computed for
    the same requests (the reference after the variant's prompt: its `reference_given_question` rows), and the
    study's table holds them per variant."""
    work, _ = toy_run
    table = pl.read_parquet(work / TABLE).filter(pl.col("metric") == "toy_reference_loglik")
    for variant, folder in ((VARIANT, VPATH), ("baseline", "")):
        logliks = pl.read_parquet(work / f"results/{folder}loglik/{SMOL}/{BENCHMARK}.parquet")
        expected = dict(logliks.filter(pl.col("kind") == "reference_given_question").select("id", "loglik").rows())
        scores = pl.read_parquet(work / f"results/{folder}scores/{SMOL}/{BENCHMARK}/toy_reference_loglik.parquet")
        assert len(expected) == 2 and dict(zip(scores["id"], scores["value"])) == pytest.approx(expected, abs=1e-3)
        rows = table.filter(pl.col("variant") == variant)
        assert dict(zip(rows["id"], rows["value"])) == dict(zip(scores["id"], scores["value"])), variant
    # the variant's prompt changed the values (a job of the variant's own, not the run's file)
    assert not table.filter(pl.col("variant") == VARIANT)["value"].equals(
        table.filter(pl.col("variant") == "baseline")["value"]
    )
