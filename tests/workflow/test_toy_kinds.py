"""A study kind and a job kind are each one registered entry: a toy of each, registered here in a few lines, and a
study over them planned and dry-run through the run's own rules (Snakemake's Python API in this process, as
`snakemake -n` builds its DAG: the registrations live in this process only, so no job is run).

The toy job kind is a metric family (careval.metrics.registry.FAMILIES) that a benchmark entry asks for
(`extra_metrics`): the run's scoring rule (score_family) scores it, with no rule, spec or plan method of its own.
The toy study kind sweeps a benchmark's prompt under a section of its own (careval.plan.study_kinds); its section is
the one line the config schema adds (its sweep sections' pattern). No line of study code knows either of them.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml
from workflow_runs import planned_dag, reduced_config

import careval.config
from careval.config import load_schema
from careval.metrics.registry import FAMILIES, MetricFamily, MetricSpec
from careval.plan import build_plan
from careval.plan.study_kinds import STUDY_KINDS, StudyKind

REPO = Path(__file__).resolve().parents[2]
SMOL = "smollm2-135m-instruct"
BENCHMARK = "demo_open_qa"
SHORT = "Answer in one line.\n\nQuestion: {question}\nAnswer:"


@pytest.fixture
def toy_kinds(monkeypatch):
    """The toy job kind and study kind, registered for this test only."""
    # a job kind: a metric family the scoring rule computes where a benchmark entry lists it (a scorer of its own)
    toy = MetricSpec("toy_length", "toy_length", False, bounds=(0.0, float("inf")), label="toy length")
    monkeypatch.setitem(
        FAMILIES, "toy_length", MetricFamily("toy_length", "toy", job="extra", metrics=(toy,), scorer="toy:length")
    )
    # a study kind: the benchmarks' prompt, swept under a section of its own, re-running the study's models' jobs
    monkeypatch.setitem(STUDY_KINDS, "prompting", StudyKind("prompting", "model", ("prompt",), "benchmarks"))
    # the schema's one line: the sweep sections it takes (config.schema.yaml, $defs.study.sweep)
    schema = load_schema()
    names = schema["$defs"]["study"]["properties"]["sweep"]["propertyNames"]
    names["pattern"] = names["pattern"].replace("^(model|", "^(prompting|model|")
    monkeypatch.setitem(careval.config._SCHEMA_CACHE, "schema", schema)


def _config(demo_model_dirs) -> dict:
    config = reduced_config(REPO, [SMOL], {BENCHMARK: {"limit": 2, "extra_metrics": ["toy_length"]}})
    config["studies"] = {
        "toy": {"models": [SMOL], "benchmarks": [BENCHMARK], "sweep": {"prompting": {"prompt": {"short": SHORT}}}}
    }
    return config


def test_a_toy_study_kind_over_a_toy_job_kind_plans_through_the_runs_own_rules(toy_kinds, demo_model_dirs, tmp_path):
    config = _config(demo_model_dirs)
    plan = build_plan(copy.deepcopy(config))
    study = plan.studies["toy"]
    variant = "prompt=short"
    # the variant's plan is the run's code on the run's config with the toy kind's value where the kind puts it
    assert study.kind == "model" and study.swept == [variant] and study.baselines == {SMOL: "baseline"}
    assert study.variants[variant].plan.benchmarks[BENCHMARK].prompt == SHORT
    assert plan.benchmarks[BENCHMARK].prompt != SHORT
    # the toy family is one of the study's rows: the variant's own file, the run's file for the baseline
    vpath = "studies/toy/prompt=short/"
    own = f"results/{vpath}scores/{SMOL}/{BENCHMARK}/toy_length.parquet"
    toy_sources = [(s.variant, s.path) for s in study.sources() if s.family == "toy_length"]
    assert toy_sources == [(variant, own), ("baseline", f"results/scores/{SMOL}/{BENCHMARK}/toy_length.parquet")]
    assert study.own_jobs() == [(variant, SMOL, BENCHMARK, 0)]

    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    with planned_dag(
        REPO / "Snakefile", tmp_path / "work", configfile, "results/studies/toy/sample_scores.parquet"
    ) as w:
        jobs = {
            (job.rule.name, job.wildcards.get("vpath", ""), job.wildcards.get("family", "")): job for job in w.dag.jobs
        }
    # the variant's inference and its toy family's scoring are the run's own rules under the variant's folder
    assert ("infer_open", vpath, "") in jobs
    toy_job = jobs[("score_family", vpath, "toy_length")]
    assert [str(f) for f in toy_job.output] == [own]
    assert toy_job.params.job.spec.families[0].name == "toy_length"
    assert f"results/{vpath}generations/{SMOL}/{BENCHMARK}.parquet" in {str(f) for f in toy_job.input}
    # the run's own toy file is made by the same rule outside any study folder, and the study's table reads both
    assert ("score_family", "", "toy_length") in jobs
    table = jobs[("study_sample_scores", "", "")]
    assert {own, f"results/scores/{SMOL}/{BENCHMARK}/toy_length.parquet"} <= {str(f) for f in table.input}
    # no rule of the workflow is named after either toy
    assert not [name for name, _, _ in jobs if re.search("toy|prompting", name)]
