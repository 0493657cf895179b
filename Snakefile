"""careval: evaluate healthcare LLMs beyond multiple-choice QA (see README.md)."""
import sys
from pathlib import Path

from careval.config import ConfigError, load_schema, prepare_config
from careval.datasets.registry import UnknownBenchmarkError, get_benchmark

# The demo config is the default; a config given with --configfile replaces it (Snakemake would
# otherwise merge the two, adding the demo's models and benchmarks to e.g. config/paper.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"

report: "workflow/report/workflow.rst"

# A typo must stop the run before any job, with one line naming the key.
try:
    _validated = prepare_config(config, load_schema(Path(workflow.basedir) / "workflow/schemas/config.schema.yaml"))
    for _name, _overrides in _validated["benchmarks"].items():
        get_benchmark(_name, _overrides)
except (ConfigError, UnknownBenchmarkError) as error:
    sys.exit(f"careval config error: {error}")
config.clear()
config.update(_validated)


include: "workflow/rules/common.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/scoring.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/relaxed_perplexity.smk"
include: "workflow/rules/resilience.smk"
include: "workflow/rules/consistency.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/careqa.smk"


rule all:
    default_target: True
    input:
        f"{RESULTS}/correlations.pdf",
        f"{RESULTS}/summary/scores.parquet",
