"""One config -> one frozen plan: the run's and its studies' variants'. The Snakefile calls :func:`build_plan` once;
the rules ask the plan, they decide nothing.

The package's modules, each one concept: families (which metric families a benchmark is scored with), run (the
:class:`Plan`, its files and job specs), roles (the judge, jury, rephraser and CareQA LLMs a config names),
run_checks (the run's cross-checks), build_run (config -> the run's Plan); study_kinds (the registered kinds of
study), study (a planned study: where each output of each variant comes from), variants (a sweep's grid and each
variant's plans, by build_run), studies (every study of a config), study_checks (the studies' checks at the door)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from careval.config import ConfigError, read_config_file
from careval.plan.build_run import build_run_plan
from careval.plan.families import EXTRA_FAMILIES, LLM_FAMILIES, LM_EVAL_SCORING, benchmark_families
from careval.plan.roles import inline_model_name
from careval.plan.run import Plan
from careval.plan.studies import build_studies
from careval.plan.study_checks import check_studies
from careval.plugins import PluginError, load_plugins

__all__ = [
    "EXTRA_FAMILIES",
    "LLM_FAMILIES",
    "LM_EVAL_SCORING",
    "ConfigError",
    "Plan",
    "benchmark_families",
    "build_plan",
    "inline_model_name",
    "load_plan",
]


def build_plan(config: dict, schema: dict | None = None) -> Plan:
    """Validate `config` (raw, as read from YAML) and build its plan, its studies' variants included; ConfigError
    names the key."""
    # the user's own registrations first: a study of a plugin's kind, a benchmark scored with its family
    if isinstance(config.get("plugins"), list):
        try:
            load_plugins(str(entry) for entry in config["plugins"])
        except PluginError as error:
            raise ConfigError(str(error)) from error
    # the studies' mistakes the schema would name vaguely, or not at all (careval.plan.study_checks)
    check_studies(config)
    plan = build_run_plan(config, schema)
    if not plan.config["studies"]:
        return plan
    studies = build_studies(config, plan, schema)
    own = {
        spec.name: spec
        for study in studies.values()
        for variant in study.variants.values()
        for spec in variant.plan.models.values()
        if spec.name not in plan.models and spec.name not in plan.entries
    }
    entries = {
        name: entry
        for study in studies.values()
        for v in study.variants.values()
        for name, entry in v.plan.entries.items()
    }
    # every variant's folder (the rules' `vpath` wildcard) and its plan
    variant_of = {
        vpath: (name, variant, run)
        for name, study in studies.items()
        for vpath, (variant, run) in study.vpaths().items()
    }
    return replace(
        plan,
        analysis=replace(
            plan.analysis,
            studies=tuple(study.page() for study in studies.values()),
            table6=any(study.examples for study in studies.values()),
        ),
        studies=studies,
        study_models=own,
        entries={**entries, **plan.entries},
        variant_of=variant_of,
        variant_plans={v: studies[s].variants[name].plans[run] for v, (s, name, run) in variant_of.items()},
    )


def load_plan(path: Path | str) -> Plan:
    """The plan of a config file (the CLI's `careval plan`, tests), read strictly (careval.config.read_config_file)."""
    return build_plan(read_config_file(path))
