"""A job spec's identity: what Snakemake compares, one way of writing each setting, execution fields left out."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import field

import pytest
import yaml

from careval.backends.base import Sampling
from careval.canonical import EXECUTION, JobParam, JobSpec, canonical, job_of, job_spec
from careval.plan import build_plan


@job_spec
class _Spec(JobSpec):
    options: dict
    sampling: Sampling | None
    batch_size: int = field(metadata=EXECUTION)


def test_identity_is_sorted_numbers_by_value_and_leaves_out_execution_fields():
    a = _Spec({"b": 1, "a": [1.0, "x"]}, Sampling(temperature=0.0, top_p=1.0), batch_size=8)
    b = _Spec({"a": (1, "x"), "b": 1.0}, Sampling(temperature=0, top_p=1), batch_size=32)
    assert repr(a) == repr(b)
    assert repr(a) == (
        '_Spec{"options":{"a":[1,"x"],"b":1},"sampling":{"max_new_tokens":64,"seed":1234,"stop":[],'
        '"temperature":0,"top_p":1}}'
    )
    assert repr(_Spec({"b": 1.5}, None, 8)) != repr(_Spec({"b": 1}, None, 8))
    assert repr(_Spec({"flag": True}, None, 8)) != repr(_Spec({"flag": 1}, None, 8))  # a bool is no number


def test_canonical_refuses_what_is_not_a_plain_setting():
    with pytest.raises(TypeError, match="plain settings"):
        canonical({"a": object()})


def test_a_job_param_is_a_tuple_snakemake_records_by_the_specs_repr_and_survives_pickling():
    spec = _Spec({"a": 1}, None, batch_size=4)
    param = JobParam(spec)
    assert isinstance(param, tuple) and repr(param) == repr(spec)
    again = pickle.loads(pickle.dumps(param))  # as Snakemake hands params to a script and the warm worker
    assert isinstance(again, JobParam) and again.spec == spec and again.spec.batch_size == 4

    class _Snakemake:
        class params:
            job = param

    assert job_of(_Snakemake) is spec


def test_a_spec_writes_its_identity_once_and_pickles_without_it():
    """repr is the identity as json.dumps writes it (computed here anew), kept on the frozen spec after the first call,
    and left out of a pickle: the bytes a job receives are those of a spec whose repr was never asked."""
    spec, fresh = _Spec({"b": 2, "a": 1.0}, None, batch_size=4), _Spec({"b": 2, "a": 1.0}, None, batch_size=4)
    written = '_Spec{"options":{"a":1,"b":2},"sampling":null}'
    assert repr(spec) == written and spec.__dict__["_identity"] == written
    assert repr(spec) is repr(spec)  # the same string, not written again
    assert pickle.dumps(spec) == pickle.dumps(fresh) and "_identity" not in fresh.__dict__
    again = pickle.loads(pickle.dumps(spec))
    assert "_identity" not in again.__dict__ and again == spec and repr(again) == written
    assert repr(dataclasses.replace(spec, options={"a": 2})) == '_Spec{"options":{"a":2},"sampling":null}'


@pytest.fixture
def demo(repo_root) -> dict:
    return yaml.safe_load((repo_root / "config" / "config.yaml").read_text())


def test_a_job_spec_holds_only_what_the_job_reads(demo):
    """Two configs that differ in one setting give different specs exactly to the jobs that read it."""
    base = build_plan(demo)
    changed = yaml.safe_load(yaml.safe_dump(demo))
    changed["metrics"]["judge"]["retries"] = 1
    changed["metrics"]["bertscore"]["batch_size"] = 4
    changed["resources"]["llm_threads"] = 2
    other = build_plan(changed)
    model, open_qa = "gemma3-270m", "demo_open_qa"
    assert repr(other.judge_job()) != repr(base.judge_job())
    assert repr(other.judge_job(repeats=True)) != repr(base.judge_job(repeats=True))
    families = base.score_job_families("open")
    assert repr(other.score_job(open_qa, families)) == repr(base.score_job(open_qa, families))
    assert other.score_job(open_qa, families).options()["bertscore"]["batch_size"] == 4  # carried, not compared
    for build in (other.infer_job, other.relaxed_perplexity_job, other.consistency_job):
        assert repr(build(model, open_qa)) == repr(getattr(base, build.__name__)(model, open_qa))
    assert other.infer_job(model, open_qa).model.threads == 2
    assert repr(other.rephrase_job()) == repr(base.rephrase_job())


def test_the_effective_decoding_is_what_a_generating_job_reads(demo):
    """generation.stop reaches only jobs whose benchmark has no stop of its own; a log-likelihood job has none."""
    base = build_plan(demo)
    changed = yaml.safe_load(yaml.safe_dump(demo))
    changed["generation"]["stop"] = ["\n\n"]
    changed["benchmarks"]["demo_note"] = {"limit": 6, "stop": ["###"]}
    other = build_plan(changed)
    assert other.infer_job("gemma3-270m", "demo_open_qa").sampling.stop == ("\n\n",)
    assert other.infer_job("gemma3-270m", "demo_note").sampling.stop == ("###",)
    assert base.infer_job("gemma3-270m", "demo_mcqa").sampling is None
    assert repr(other.infer_job("gemma3-270m", "demo_mcqa")) == repr(base.infer_job("gemma3-270m", "demo_mcqa"))


def _every_job_spec(plan) -> dict[str, str]:
    """The identity (repr) of every job spec the plan gives the demo's rules, by job."""
    specs = {f"prepare {name}": plan.prepare_job(name) for name in plan.entries}
    for benchmark in plan.benchmarks:
        specs[f"normalise {benchmark}"] = plan.normalise_job(benchmark)
        specs[f"score {benchmark}"] = plan.score_job(benchmark, plan.families(benchmark))
        for model in plan.models:
            specs[f"infer {model} {benchmark}"] = plan.infer_job(model, benchmark)
            specs[f"relaxed_perplexity {model} {benchmark}"] = plan.relaxed_perplexity_job(model, benchmark)
            specs[f"consistency {model} {benchmark}"] = plan.consistency_job(model, benchmark)
    specs.update(rephrase=plan.rephrase_job(), jury=plan.jury_job(), jury_report=plan.jury_report_job())
    specs.update({f"judge {name}": plan.judge_job(judge=name) for name in plan.judges})
    specs.update(aggregate=plan.aggregate_job(), comparisons=plan.comparisons_job(), cost=plan.cost_job())
    specs.update({f"careqa {step}": plan.careqa_llm_job(step) for step in plan.careqa_llms})
    specs.update(statistics=plan.careqa_statistics_job(), report=plan.analysis.report_job)
    specs.update(figure_index=plan.analysis.figure_index_job, tables=plan.analysis.paper_tables_job)
    return {job: repr(spec) for job, spec in specs.items()}


@pytest.mark.parametrize("order", [sorted, lambda keys: list(reversed(list(keys)))], ids=["sorted", "reversed"])
def test_no_job_reads_the_order_of_the_models_mapping(demo, order):
    """The models mapping reordered (the demo's jury and people's ratings on: every job kind of the demo is planned)
    gives every job the same spec; jury_report's kept the models in config order (issue 40)."""
    assert demo["analysis"]["human_ratings"] and demo["metrics"]["judge"]["models"]
    reordered = copy.deepcopy(demo)
    reordered["models"] = {name: demo["models"][name] for name in order(demo["models"])}
    assert list(reordered["models"]) != list(demo["models"])
    assert _every_job_spec(build_plan(reordered)) == _every_job_spec(build_plan(demo))
