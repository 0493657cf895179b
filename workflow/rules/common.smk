# Names, paths and input functions shared by the rule modules. No science here.
import re
from pathlib import Path
import sys

from careval.datasets.registry import EXTRA_FAMILIES, LLM_FAMILIES, TASK_METRICS, LocalSource, get_benchmark
from careval.datasets.schema import TASKS
from careval.models import needs_preparation
from careval.analysis.elo import resolve_elo_path
from careval.analysis.plan import AnalysisConfigError, analysis_plan

RESULTS = config["results_dir"]
MODELS_DIR = config["models_dir"]
DATASETS_DIR = config["datasets_dir"]
MODELS = list(config["models"])
BENCHMARKS = {name: get_benchmark(name, overrides) for name, overrides in config["benchmarks"].items()}
RES = config.get("resources", {})


def benchmark_pattern(keep):
    """A wildcard regex matching the configured benchmarks whose entry `keep` accepts (none: matches nothing)."""
    return "|".join(re.escape(b) for b, e in BENCHMARKS.items() if keep(e)) or "(?!)"


# Open-ended benchmarks (task == "open"): the judge and Relaxed Perplexity rules use this one.
OPEN_PATTERN = benchmark_pattern(lambda e: e.task == "open")
CLOSED_PATTERN = benchmark_pattern(lambda e: e.task != "open")
# A benchmark either has the model generate (open, relation extraction, generate-mode classification)
# or is scored by log-likelihood only (MCQA, prescription, loglik-mode classification).
GENERATE_PATTERN = benchmark_pattern(lambda e: e.generates)
LOGLIK_PATTERN = benchmark_pattern(lambda e: not e.generates)
TASK_PATTERNS = {task: benchmark_pattern(lambda e, task=task: e.task == task) for task in TASKS}
# Which analyses run on which open-ended benchmarks (resilience, self-consistency, Elo): the figures follow from it.
try:
    PLAN = analysis_plan(config, [b for b, e in BENCHMARKS.items() if e.task == "open"])
except AnalysisConfigError as error:
    sys.exit(f"careval config error: {error}")


wildcard_constraints:
    model="|".join(re.escape(m) for m in MODELS),
    benchmark="|".join(re.escape(b) for b in BENCHMARKS),


def model_entry(wildcards):
    return config["models"][wildcards.model]


def model_resource(key, default, entry_of=model_entry):
    """A job that loads a model asks for what the model's entry says, else its size class
    (config `model_sizes`), else the default: a 70B model needs more than an 8B one.
    `entry_of(wildcards)` names the model the job loads (the evaluated one unless a judge/rephraser)."""

    def lookup(wildcards):
        entry = entry_of(wildcards)
        size = config.get("model_sizes", {}).get(entry.get("size"), {})
        return entry.get(key, size.get(key, default))

    return lookup


def model_folder(wildcards):
    """A model from a PyPI wheel is a prepared folder (a rule); hub and local models need nothing."""
    return [f"{MODELS_DIR}/.prepared/{wildcards.model}.json"] if needs_preparation(model_entry(wildcards)) else []


def benchmark_limit(wildcards):
    return config["benchmarks"][wildcards.benchmark].get("limit") or config["limit"]


# Metric families a config turns off (`metrics.skip`), e.g. the demo's: no BLEURT checkpoint offline.
SKIPPED_FAMILIES = set(config["metrics"].get("skip", []))


# An LLM-based family may be limited to some benchmarks (`metrics.<family>.benchmarks`): the paper
# computes Relaxed Perplexity on OLAPH, CareQA-Open and MedText only.
FAMILY_BENCHMARKS = {family: config["metrics"].get(family, {}).get("benchmarks") for family in LLM_FAMILIES}
for _family, _chosen in FAMILY_BENCHMARKS.items():
    _unknown = [b for b in _chosen or [] if BENCHMARKS.get(b) is None or BENCHMARKS[b].task != "open"]
    if _unknown:
        sys.exit(f"careval config error: metrics.{_family}.benchmarks: {', '.join(_unknown)} is not an "
                 f"open-ended benchmark of this config")


def family_options(family):
    """A family's config section as its library function takes it (which benchmarks is the DAG's business)."""
    return {key: value for key, value in config["metrics"].get(family, {}).items() if key != "benchmarks"}


def benchmark_families(name, entry):
    """The metric families a benchmark is scored with under this config."""
    return [family for family in entry.metrics if family not in SKIPPED_FAMILIES
            and (FAMILY_BENCHMARKS.get(family) is None or name in FAMILY_BENCHMARKS[family])]


def score_job_families(task):
    """The metric families the scoring job of a task writes (LLM-based and per-entry ones have their own rules)."""
    return [family for family in TASK_METRICS[task] if family not in LLM_FAMILIES and family not in SKIPPED_FAMILIES]


def text_families():
    """The open-ended families scored on the text alone (what repeated outputs are rescored with)."""
    return [family for family in score_job_families("open") if family != "perplexity"]


def score_files():
    return [
        f"{RESULTS}/scores/{model}/{name}/{family}.parquet"
        for model in MODELS
        for name, entry in BENCHMARKS.items()
        for family in benchmark_families(name, entry)
    ]


def benchmark_source_files(wildcards):
    """A local source is an input, so editing the data re-normalises it; hub sources are fetched in the job.
    A local file not there yet (credentialed MIMIC-III, Kaggle's MTSamples) is left to the job, whose
    one-line error says how to provide it, so the rest of the study still plans and runs."""
    source = BENCHMARKS[wildcards.benchmark].source
    return [source.path] if isinstance(source, LocalSource) and Path(source.path).exists() else []
