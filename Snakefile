"""careval: evaluate healthcare LLMs beyond multiple-choice QA (see README.md)."""
import sys
from pathlib import Path

from careval.config import ConfigError, load_schema, prepare_config
from careval.datasets.registry import UnknownBenchmarkError, get_benchmark

configfile: "config/config.yaml"

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
include: "workflow/rules/analysis.smk"


rule all:
    default_target: True
    input:
        f"{RESULTS}/correlations.pdf",
        f"{RESULTS}/summary/scores.parquet",
