# Names, paths and input functions shared by the rule modules. No science here.
import re

from careval.datasets.registry import TASK_METRICS, LocalSource, get_benchmark
from careval.models import needs_preparation

RESULTS = config["results_dir"]
MODELS_DIR = config["models_dir"]
DATASETS_DIR = config["datasets_dir"]
MODELS = list(config["models"])
BENCHMARKS = {name: get_benchmark(name, overrides) for name, overrides in config["benchmarks"].items()}
RES = config.get("resources", {})
# Open-ended benchmarks are generated and scored on text; the others are scored by log-likelihood.
OPEN_PATTERN = "|".join(re.escape(b) for b, e in BENCHMARKS.items() if e.task == "open") or "(?!)"
CLOSED_PATTERN = "|".join(re.escape(b) for b, e in BENCHMARKS.items() if e.task != "open") or "(?!)"


wildcard_constraints:
    model="|".join(re.escape(m) for m in MODELS),
    benchmark="|".join(re.escape(b) for b in BENCHMARKS),


def model_entry(wildcards):
    return config["models"][wildcards.model]


def model_folder(wildcards):
    """A model from a PyPI wheel is a prepared folder (a rule); hub and local models need nothing."""
    return [f"{MODELS_DIR}/.prepared/{wildcards.model}.json"] if needs_preparation(model_entry(wildcards)) else []


def benchmark_limit(wildcards):
    return config["benchmarks"][wildcards.benchmark].get("limit") or config["limit"]


def score_files():
    return [
        f"{RESULTS}/scores/{model}/{name}/{family}.parquet"
        for model in MODELS
        for name, entry in BENCHMARKS.items()
        for family in entry.metrics
    ]


def benchmark_source_files(wildcards):
    """A local source is an input, so editing the data re-normalises it; hub sources are fetched in the job."""
    source = BENCHMARKS[wildcards.benchmark].source
    return [source.path] if isinstance(source, LocalSource) else []
