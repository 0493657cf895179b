"""A backend registered in a test (a dozen lines) runs the demo's slice end to end through the jobs' own code, Relaxed
Perplexity and the judge included; a backend without log-probabilities is refused at plan time (issue #39)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import polars as pl
import pytest
import yaml

from careval.backends import Backend, Capabilities, Continuation, PrefixedTarget, register_backend
from careval.backends.base import step_prefixes
from careval.config import ConfigError, load_schema
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
FAKE = Capabilities(prompt_logprobs=True, top_logprobs=False, chat_template=False, max_gpus=0)


# ------------------------------------------------------------------------------------------- the backend
@register_backend("fake", FAKE)
class FakeBackend(Backend):
    """Numbers from the text's lengths; the judge's verdict "[RESULT] n" with n from the prompt's length."""

    backend, capabilities = "fake", FAKE

    def __init__(self, spec):
        self.name, self.max_length = spec.name, 512

    def encode(self, text):
        return [ord(ch) % 50 for ch in text]

    def generate(self, prompts, sampling, instruction=None):
        return [f"Fine. [RESULT] {1 + len(p) % 5}" for p in prompts]

    def loglikelihood(self, pairs):
        return [-len(continuation) / 10 for _, continuation in pairs]

    def loglikelihood_rolling(self, texts):
        return [-len(text) / 10 for text in texts]

    def sample_continuations(self, prompt_ids, *, n, max_tokens, top_p, seed):
        return [Continuation((i,) * max_tokens, -float(i)) for i in range(n)]

    def target_logprobs(self, prompt_ids, continuations, lengths, targets):
        prefixes = [p for group in step_prefixes(continuations, lengths).values() for p in group]
        return [{p: PrefixedTarget(-0.1 * len(p), -0.2 * len(t)) for p in prefixes} for t in targets]


# ------------------------------------------------------------------------------------------- the plan
def fake_config(tmp_path: Path, backend: str = "fake", benchmarks: dict | None = None) -> dict:
    """The demo config with one model of `backend` (a local folder), judged and rephrased by itself."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "model" / "config.json").write_text("{}")  # a local model is a folder with its config (issue 40)
    config.update(results_dir=str(tmp_path / "results"), datasets_dir=str(tmp_path / "datasets"))
    config["resources"]["cache_dir"] = str(tmp_path / "cache")
    config["models"] = {"fake-model": {"source": f"local:{tmp_path / 'model'}", "backend": backend}}
    config["benchmarks"] = benchmarks or {"demo_mcqa": {"limit": 4}, "demo_open_qa": {"limit": 4}}
    config["metrics"]["skip"] = ["bleurt", "bertscore", "moverscore"]  # encoders: seconds each, not the subject
    config["metrics"]["judge"] = {**config["metrics"]["judge"], "model": "fake-model", "benchmarks": ["demo_open_qa"]}
    del config["metrics"]["judge"]["models"]
    analysis = config["analysis"]
    analysis.update(human_ratings=None, elo_csv=None, model_sets={"demo": ["fake-model"]})
    analysis["resilience"]["rephraser"] = "fake-model"
    config.pop("studies", None)  # the demo's studies name its own models
    config["careqa"] = {key: value for key, value in config["careqa"].items() if key in ("editions", "review")}
    return config


def plan_with(config: dict, backends: tuple[str, ...] = ("fake",)):
    """The plan of `config` under a schema whose backend enum also names `backends` (what adding one to the schema does)."""
    schema = copy.deepcopy(load_schema())
    schema["$defs"]["model"]["properties"]["backend"]["enum"] += list(backends)
    return build_plan(config, schema)


# ------------------------------------------------------------------------------------------- the slice
def run_slice(plan, work: Path) -> pl.DataFrame:
    """The demo slice's jobs, each called as its workflow script calls it: normalise, inference, scoring, the
    judge, Relaxed Perplexity, the summary."""
    from careval.analysis.aggregate import score_files_from_paths, write_summary
    from careval.datasets import build_benchmark
    from careval.inference import run_inference
    from careval.jobs.judge import run_judge
    from careval.jobs.relaxed_perplexity import run_relaxed_perplexity
    from careval.metrics.registry import FAMILIES
    from careval.scoring import score_benchmark

    model, results = "fake-model", work / "results"
    score_paths = []
    for name in plan.benchmarks:
        normalise = plan.normalise_job(name)
        samples = work / "datasets" / f"{name}.parquet"
        build_benchmark(normalise.entry, samples, limit=normalise.limit)
        infer = plan.infer_job(model, name)
        loglik, generations = results / "loglik" / f"{name}.parquet", results / "generations" / f"{name}.parquet"
        run_inference(
            samples,
            infer.entry,
            infer.model.for_job(threads=1),
            infer.sampling,
            loglik,
            generations if infer.entry.generates else None,
            request_batch=infer.request_batch,
        )
        families = plan.families(name)
        scored = {f: results / "scores" / model / name / f"{f}.parquet" for f in families}
        job = plan.score_job(name, [f for f in families if FAMILIES[f].job == "score"])
        score_benchmark(
            samples,
            {f: scored[f] for f in job.family_names},
            generations_path=generations if infer.entry.generates else None,
            loglik_path=loglik,
            options=job.options(),
            min_chars=job.min_chars,
        )
        if "judge" in families:
            judge = plan.judge_job()
            run_judge(
                samples,
                generations,
                scored["judge"],
                judge.judge.for_job(threads=1),
                judge.options,
                request_batch=judge.request_batch,
            )
        if "relaxed_perplexity" in families:
            relaxed = plan.relaxed_perplexity_job(model, name)
            run_relaxed_perplexity(
                samples,
                scored["relaxed_perplexity"],
                relaxed.entry.prompt,
                relaxed.model.for_job(threads=1),
                relaxed.options,
            )
        score_paths += [str(path) for path in scored.values()]
    tasks = {name: entry.task for name, entry in plan.benchmarks.items()}
    summary = results / "summary" / "scores.parquet"
    write_summary(score_files_from_paths(score_paths, tasks), summary, results / "summary" / "sample_scores.parquet")
    return pl.read_parquet(summary)


def test_a_backend_registered_in_a_test_runs_the_demo_slice_end_to_end(tmp_path):
    plan = plan_with(fake_config(tmp_path))
    summary = run_slice(plan, tmp_path)
    value = {(r["benchmark"], r["metric"]): r for r in summary.iter_rows(named=True)}
    # every family of the slice has its numbers, each from the fake's answers
    for key in [
        ("demo_mcqa", "acc"),
        ("demo_open_qa", "rouge1"),
        ("demo_open_qa", "word_perplexity"),
        ("demo_open_qa", "judge_helpfulness"),
        ("demo_open_qa", "judge_helpfulness_expected"),
        ("demo_open_qa", "relaxed_perplexity"),
    ]:
        assert math.isfinite(value[key]["value"]) and value[key]["n_failed"] == 0, key
    # the judge's verdicts parse: its grades are the fake's 1 + len(prompt) % 5, as the judge formats its prompts
    judged = pl.read_parquet(tmp_path / "results" / "scores" / "fake-model" / "demo_open_qa" / "judge.parquet")
    grades = judged.filter(pl.col("metric") == "judge_helpfulness")
    assert set(grades["status"]) == {"ok"} and set(grades["value"]) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    # Relaxed Perplexity by hand from the fake's numbers (skewed, the demo's l=2 of s=3, stride 8 of 16 tokens):
    # n = 0 has one prefix, n = 8 and 16 the l kept ones, each log P(t | q + p) = -0.2 T, so the terms are
    # -0.2 T, -0.2 T + log 2, -0.2 T + log 2
    options = plan.relaxed_perplexity_job("fake-model", "demo_open_qa").options
    samples = pl.read_parquet(tmp_path / "datasets" / "demo_open_qa.parquet").head(options["limit"])
    backend = FakeBackend(plan.models["fake-model"])
    expected = []
    for reference in samples["reference"]:
        t = len(backend.encode(" " + reference.strip()))
        entropy = -(3 * -0.2 * t + 2 * math.log(options["l"]))
        expected.append(math.exp(entropy / (options["max_tokens"] + t)))
    assert value[("demo_open_qa", "relaxed_perplexity")]["value"] == pytest.approx(
        math.exp(sum(math.log(x) for x in expected) / len(expected)), rel=1e-12
    )  # the geometric mean, as perplexities average


# ------------------------------------------------------------------------------------------- refused at plan time
@register_backend(
    "fake_generator", Capabilities(prompt_logprobs=False, top_logprobs=False, chat_template=False, max_gpus=0)
)
def _generator(spec):  # never built: the plan refuses it first
    raise AssertionError("the plan must refuse a backend without log-probabilities before any job")


@pytest.mark.parametrize(
    "benchmarks, skip, needed",
    [
        ({"demo_mcqa": None}, [], "accuracy"),
        ({"demo_open_qa": None}, [], "perplexity"),
        ({"demo_open_qa": None}, ["perplexity"], "relaxed_perplexity"),
        ({"demo_mcqa": None, "demo_open_qa": None}, ["perplexity", "relaxed_perplexity"], "accuracy"),
    ],
)
def test_a_backend_without_logprobs_is_refused_at_plan_time_for_the_families_that_need_them(
    tmp_path, benchmarks, skip, needed
):
    config = fake_config(tmp_path, backend="fake_generator", benchmarks=benchmarks)
    config["metrics"]["skip"] += skip
    config["analysis"]["relaxed_perplexity_anchor"] = None
    config["metrics"]["judge"].pop("benchmarks")
    config["metrics"]["relaxed_perplexity"].pop("benchmarks")
    for analysis in ("resilience", "consistency"):  # their reruns need log-probabilities too: left out here
        config["analysis"][analysis]["benchmarks"] = []
    with pytest.raises(ConfigError) as error:
        plan_with(config, backends=("fake_generator",))
    benchmark = next(iter(benchmarks))
    assert str(error.value) == (
        f"models.fake-model: backend fake_generator has no prompt log-probabilities: {needed} needs them (on {benchmark})"
    )


def test_a_generation_only_backend_runs_the_generation_families(tmp_path):
    """Without perplexity and Relaxed Perplexity, an open-ended benchmark asks no log-probability of its model (a chat
    API): it plans, and its inference computes none (careval.inference)."""
    config = fake_config(tmp_path, backend="fake_generator", benchmarks={"demo_open_qa": None})
    config["metrics"]["skip"] += ["perplexity", "relaxed_perplexity"]
    config["analysis"]["relaxed_perplexity_anchor"] = None
    config["metrics"]["judge"].pop("benchmarks")
    config["metrics"]["relaxed_perplexity"].pop("benchmarks")
    for analysis in ("resilience", "consistency"):
        config["analysis"][analysis]["benchmarks"] = []
    plan = plan_with(config, backends=("fake_generator",))
    assert "rouge" in plan.families("demo_open_qa") and "perplexity" not in plan.families("demo_open_qa")


def test_a_chat_template_or_gpus_the_backend_cannot_honour_are_refused_at_plan_time(tmp_path):
    config = fake_config(tmp_path)
    config["models"]["fake-model"]["chat_template"] = True
    with pytest.raises(ConfigError, match=r"^models\.fake-model\.chat_template: backend fake has no chat template"):
        plan_with(config)
    config = fake_config(tmp_path, backend="hf")
    config["models"]["fake-model"]["gpus"] = 2
    with pytest.raises(ConfigError, match=r"^models\.fake-model\.gpus: backend hf runs a model on at most 1 GPU"):
        build_plan(config)


def test_the_judge_needs_no_logprobs(tmp_path):
    """A judge without log-probabilities grades without a score distribution (careval.metrics.judge): allowed."""
    config = fake_config(tmp_path)
    config["models"]["judge"] = {"source": f"local:{tmp_path / 'model'}", "backend": "fake_generator"}
    config["metrics"]["judge"]["model"] = "judge"
    config["analysis"]["model_sets"] = {"demo": ["fake-model", "judge"]}
    with pytest.raises(ConfigError, match=r"^models\.judge: backend fake_generator has no prompt log-probabilities"):
        plan_with(config, backends=("fake", "fake_generator"))  # as an evaluated model it is refused ...
    config["metrics"]["judge"]["model"] = {"source": f"local:{tmp_path / 'model'}", "backend": "fake_generator"}
    del config["models"]["judge"]
    config["analysis"]["model_sets"] = {"demo": ["fake-model"]}
    plan = plan_with(config, backends=("fake", "fake_generator"))  # ... as the judge only, it plans
    assert plan.judge is not None and plan.judge.backend == "fake_generator"
    assert json.loads(json.dumps(plan.judge.identity()))["backend"] == "fake_generator"
