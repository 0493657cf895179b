"""careval: evaluate healthcare LLMs beyond multiple-choice QA (see README.md)."""

import gc
import sys

from pathlib import Path

from careval.config import check_duplicate_keys
from careval.estimate import dry_run, summary as estimate_summary
from careval.inputs import check_input_files
from careval.plan import ConfigError, build_plan
from careval.runlock import check_lock

# Snakemake keeps every job, file and wildcard of its DAG to the end: at Python's default thresholds the cyclic garbage
# collector walked that growing heap ~2,500 times while the paper plan was built (a sixth of its CPU) and freed little.
# Fewer young collections (~1% more memory); while the DAG is built, none (below).
gc.set_threshold(100_000, 10, 10)

# The demo config is the default; a config given with --configfile replaces it (Snakemake would
# otherwise merge the two, adding the demo's models and benchmarks to e.g. config/paper.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# A lock left by a run killed on this machine is released here, with one line; a live run's never is (careval.runlock).
if workflow.is_main_process:
    lock_message = check_lock(Path.cwd(), sys.argv)
    if lock_message:
        print(lock_message, file=sys.stderr)


# One plan from the config: the schema validates and fills every default, the names are cross-checked,
# and the models, benchmarks and analyses become typed specs every rule file reads. A config error
# stops the run here, before any job, with one line naming the key.
try:
    # Snakemake's YAML loader keeps the last of two equal keys: every config file is read strictly first
    for configfile_path in workflow.configfiles:
        check_duplicate_keys(Path(configfile_path).read_text(), str(configfile_path))
    PLAN = build_plan(config)
    # every input file the config names, read as its job reads it (the job's own check comes after the models ran)
    if workflow.is_main_process:
        check_input_files(PLAN)
except ConfigError as error:
    sys.exit(f"careval config error: {error}")
if PLAN.elo_warning:
    print(f"careval warning: analysis.elo_csv: {PLAN.elo_warning}", file=sys.stderr)
for warning in PLAN.warnings:
    print(f"careval warning: {warning}", file=sys.stderr)
# a dry run says what each served model (endpoint:) will be sent and cost, before anything is: one line per model
# (careval estimate <config> has it per benchmark)
if workflow.is_main_process and dry_run(sys.argv):
    for line in estimate_summary(PLAN):
        print(f"careval estimate: {line}", file=sys.stderr)
config.clear()
config.update(PLAN.config)


include: "workflow/rules/common.smk"


# the shared engines' address files, before the DAG is built (common.smk, engine_input)
engine_placeholders()


include: "workflow/rules/models.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/engine.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/scoring.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/relaxed_perplexity.smk"
include: "workflow/rules/llm_family.smk"
include: "workflow/rules/resilience.smk"
include: "workflow/rules/consistency.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/manifest.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/comparisons.smk"
include: "workflow/rules/careqa.smk"
include: "workflow/rules/careqa_statistics.smk"
include: "workflow/rules/studies.smk"


# files cut short are named and remade, files an earlier config left are named (common.smk, check_results)
check_results()
# Snakemake reads the parameters of the input functions, params and resources anew for every job
# (inspect.signature, ~19 times a job), and checks the script of every job: each once (common.smk)
sign_rule_functions(workflow.rules)
check_each_script_once()
# no garbage collection while Snakemake builds the DAG, its objects frozen after (common.smk)
build_dag_without_collecting()


onstart:
    record_lock_owner()
    record_planned_outputs()
    start_warm_worker()


onsuccess:
    stop_warm_worker()
    write_results_index()


onerror:
    stop_warm_worker()


rule all:
    default_target: True
    input:
        f"{RESULTS}/correlations.pdf",
        f"{RESULTS}/summary/scores.parquet",
