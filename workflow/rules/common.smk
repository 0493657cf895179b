# Names, paths and input functions shared by the rule modules, all read from the plan (Snakefile). No science here.
import re
from dataclasses import asdict
from pathlib import Path

from careval.datasets.benchmark import TASKS, LocalSource
from careval.plan import EXTRA_FAMILIES

RESULTS = PLAN.results_dir
MODELS_DIR = PLAN.models_dir
DATASETS_DIR = PLAN.datasets_dir
# Every job's log lives under the results directory, so two configs (or two concurrent runs with
# different results_dir) never overwrite each other's diagnostics.
LOGS = f"{RESULTS}/logs"
MODELS = list(PLAN.models)
BENCHMARKS = PLAN.benchmarks
RES = PLAN.config["resources"]


def benchmark_pattern(keep):
    """A wildcard regex matching the configured benchmarks whose entry `keep` accepts (none: matches nothing)."""
    return "|".join(re.escape(b) for b in PLAN.benchmarks_where(keep)) or "(?!)"


# Open-ended benchmarks (task == "open"): the judge and Relaxed Perplexity rules use this one.
OPEN_PATTERN = benchmark_pattern(lambda e: e.task == "open")
# A benchmark either has the model generate (open, relation extraction, generate-mode classification)
# or is scored by log-likelihood only (MCQA, prescription, loglik-mode classification).
GENERATE_PATTERN = benchmark_pattern(lambda e: e.generates)
LOGLIK_PATTERN = benchmark_pattern(lambda e: not e.generates)
TASK_PATTERNS = {task: benchmark_pattern(lambda e, task=task: e.task == task) for task in TASKS}


wildcard_constraints:
    model="|".join(re.escape(m) for m in MODELS) or "(?!)",
    benchmark="|".join(re.escape(b) for b in BENCHMARKS),


def spec_params(spec):
    """A model spec as a plain mapping for `params:` (Snakemake compares params by repr, so a changed entry
    reruns the jobs that load it); the script rebuilds the ModelSpec with the job's own threads and GPUs."""
    return asdict(spec)


def evaluated(wildcards):
    return PLAN.models[wildcards.model]


def llm_resources(spec_of):
    """The resources of a job that loads a model, from that model's spec (`spec_of(wildcards)`): its
    entry, else its size class, else `resources.llm_*`. `gpu` becomes sbatch --gpus=N in the slurm
    profile and the backend's GPU count (vLLM tensor parallel) in the job."""
    return {
        "mem_mb": lambda w: spec_of(w).mem_mb,
        "runtime": lambda w: spec_of(w).runtime,
        "gpu": lambda w: spec_of(w).gpus,
        # one LLM job at a time inside a grouped SLURM job (the slurm profile caps it at 1 per group)
        "llm_slot": 1,
    }


def prepared_marker(spec):
    """A model from a PyPI wheel is a prepared folder (a rule); hub and local models need nothing."""
    return [f"{MODELS_DIR}/.prepared/{spec.name}.json"] if spec is not None and spec.prepared else []


def model_folder(wildcards):
    return prepared_marker(PLAN.models[wildcards.model])


def benchmark_overrides(wildcards):
    return PLAN.config["benchmarks"][wildcards.benchmark]


def score_files():
    return PLAN.score_files()


def benchmark_source_files(wildcards):
    """A local source is an input, so editing the data re-normalises it; hub sources are fetched in the job.
    A local file not there yet (credentialed MIMIC-III, Kaggle's MTSamples) is left to the job, whose
    one-line error says how to provide it, so the rest of the study still plans and runs."""
    source = BENCHMARKS[wildcards.benchmark].source
    return [source.path] if isinstance(source, LocalSource) and Path(source.path).exists() else []
