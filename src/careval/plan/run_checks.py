"""The run's cross-checks the schema cannot make, each a one-line ConfigError naming the key (or a warning line for a
setting that cannot take effect): every model's backend can do what its jobs ask, the analysis settings name what the
run writes."""

from __future__ import annotations

from careval.analysis.aggregate import MCQA_AVERAGE, MCQA_AVERAGE_METRICS
from careval.analysis.cost import cost_quality_warnings
from careval.analysis.plan import AnalysisPlan
from careval.backends.base import missing as missing_capability
from careval.backends.registry import spec_capabilities
from careval.config import ConfigError
from careval.datasets.benchmark import Benchmark
from careval.metrics.registry import FAMILIES, JUDGE_EXPECTED_SUFFIX, JUDGE_PREFIX
from careval.plan.run import Plan


def check_capabilities(plan: Plan) -> None:
    """Every model's backend can do what its jobs will ask of it (its declared careval.backends.Capabilities):
    one line now, not an error mid-job. A judge without log-probabilities is allowed: it grades without a score
    distribution (careval.metrics.judge)."""
    specs = (*plan.models.values(), *plan.judges.values(), plan.judge, plan.rephraser)
    loaded = {spec.name: spec for spec in specs if spec is not None}
    loaded.update({f"careqa.{step}": spec for step, spec in plan.careqa_llms.items()})
    for name, spec in loaded.items():
        can = spec_capabilities(spec)  # a served model's: its API's (careval.backends.openai)
        key = name if name.startswith("careqa.") else f"models.{name}"
        runtime = (
            f"openai (the {spec.endpoint.get('api', 'chat')} API of {spec.path})" if spec.endpoint else spec.backend
        )
        if spec.chat_template and not can.chat_template:
            raise ConfigError(
                f"{key}.chat_template: {missing_capability(runtime, 'chat_template')} (the server applies its own)"
            )
        if can.max_gpus is not None and spec.gpus > can.max_gpus:
            raise ConfigError(
                f"{key}.gpus: backend {spec.backend} runs a model on at most {can.max_gpus} GPU(s), not {spec.gpus}"
            )
        if can.prompt_logprobs or name not in plan.models:
            continue
        for benchmark, entry in plan.benchmarks.items():
            needs = [
                family
                for family in plan.families(benchmark)
                if FAMILIES[family].logprobs and (FAMILIES[family].job == "llm" or entry.computes_logliks)
            ]
            # a generating benchmark's own log-likelihoods feed perplexity only (careval.inference skips them)
            needs += ["inference"] if entry.computes_logliks and not entry.generates and not needs else []
            needs += ["self-consistency"] if benchmark in plan.analysis.consistency_benchmarks else []
            if needs:
                raise ConfigError(f"{key}: {missing_capability(runtime, 'prompt_logprobs', needs[0])} (on {benchmark})")


def check_analysis_settings(config: dict, raw_analysis: dict, benchmarks: dict, families, rubrics) -> None:
    """The analysis settings the schema cannot check alone: a rating range in order, and the cost page's
    benchmark and metric among what the run writes (a default the run cannot show is left to the page's note)."""
    low, high = config["analysis"]["human_rating_range"]
    if not low < high:
        raise ConfigError(
            f"analysis.human_rating_range: [{low:g}, {high:g}]: the lowest rating comes first, then the highest "
            "(e.g. [1, 5])"
        )
    cost = config["analysis"]["cost"]
    given = raw_analysis.get("cost") or {}
    benchmark, metric = cost["benchmark"], cost["metric"]
    if benchmark == MCQA_AVERAGE:
        members = [b for b in benchmarks if benchmarks[b].task == "mcqa"]
        have = list(MCQA_AVERAGE_METRICS) if members else []
    elif benchmark in benchmarks:
        have = _metric_names(benchmarks[benchmark], families(benchmark))
    else:
        if "benchmark" in given:
            raise ConfigError(
                f"analysis.cost.benchmark: '{benchmark}' is not a benchmark of this config (have: "
                f"{', '.join([*benchmarks, MCQA_AVERAGE])})"
            )
        return
    if (
        metric not in have
        and not _judged_metric(benchmark in benchmarks and "judge" in families(benchmark), rubrics, metric)
        and ("metric" in given or "benchmark" in given)
    ):
        raise ConfigError(
            f"analysis.cost.metric: '{metric}' is not a metric of {benchmark} under this config "
            f"(have: {', '.join(have) or 'none'})"
        )


def _metric_names(entry: Benchmark, families: list[str]) -> list[str]:
    """The fixed metric names a benchmark's families write (the judge's and F1-RadGraph's depend on the config; an
    lm-eval task's are those its task file names)."""
    lm_eval = entry.lm_eval
    own = list(lm_eval.metrics) if lm_eval is not None and "lm_eval" in families else []
    return own + [spec.name for family in families for spec in FAMILIES[family].metrics]


def _judged_metric(judged: bool, rubrics, metric: str) -> bool:
    """Whether `metric` is a judge_<rubric> (or its _expected) the judge writes on a benchmark it grades (`judged`)."""
    if not judged:
        return False
    return any(metric in (f"{JUDGE_PREFIX}{r}", f"{JUDGE_PREFIX}{r}{JUDGE_EXPECTED_SUFFIX}") for r in rubrics)


def ineffective_settings(config: dict, judges: dict, analysis: AnalysisPlan, benchmarks: dict) -> tuple[str, ...]:
    """Settings that cannot take effect under this config: one warning line each, naming the key."""
    warnings = []
    if len(judges) == 1:
        warnings.append(
            "metrics.judge.models: a jury of one judge: the self-preference check needs two judges (a judge's grades "
            "of its own answers are compared with the other judges'), and there is no agreement between judges"
        )
    if config["analysis"]["comparisons"]["two_level"] and not analysis.consistency_benchmarks:
        warnings.append(
            "analysis.comparisons.two_level: true, but the run has no self-consistency samples to resample "
            "(analysis.consistency.r is 0, or no open-ended benchmark): the one-level paired bootstrap runs"
        )
    warnings += cost_quality_warnings(config, analysis.mcqa_average, benchmarks)
    return tuple(warnings)
