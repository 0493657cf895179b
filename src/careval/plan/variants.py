"""A study's variants from its sweep: the grid of the swept settings' named values, and each variant's plans (the
run's config with the variant's settings applied, planned by the run's own code: careval.plan.build_run)."""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import replace
from typing import Any

from careval.config import ConfigError
from careval.plan.build_run import build_run_plan
from careval.plan.study_kinds import study_kind

# a value named by itself in a list of values (else: give a mapping name -> value)
_WORD = re.compile(r"^[A-Za-z0-9._-]{1,40}$")


def _value_name(key: str, value: Any, position: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and _WORD.match(value):
        return value
    raise ConfigError(
        f"{key}: value {position + 1} ({str(value)[:40]!r}) is not a short word that can name its variant; "
        "give the values as a mapping name -> value"
    )


def _named_values(key: str, values: Any) -> list[tuple[str, Any]]:
    if isinstance(values, list):
        named = [(_value_name(key, value, i), value) for i, value in enumerate(values)]
        names = [n for n, _ in named]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"{key}: the values {', '.join(twice)} are listed twice")
        return named
    if isinstance(values, dict):
        return sorted(values.items(), key=lambda item: item[0])
    raise ConfigError(f"{key}: give the values as a list or as a mapping name -> value, not {type(values).__name__}")


def grid(key: str, section: str, sweep: Any) -> list[tuple[str, tuple[tuple[str, Any], ...]]]:
    """Every variant of the sweep: (name, ((setting, value), ...)), the grid of the settings (by name) over their
    values (a list's in its order, a mapping's by name).
    Section `models` has one setting, `model`, whose values are the other models."""
    if section == "models":
        if isinstance(sweep, dict) and any(isinstance(v, list) for v in sweep.values()):
            raise ConfigError(f"{key}: give the other models as a list of names or a mapping variant -> model")
        return [(f"model={n}", (("model", (n, v)),)) for n, v in _named_values(key, sweep)]
    if not isinstance(sweep, dict):
        raise ConfigError(f"{key}: give the settings as a mapping setting -> values")
    axes = [
        [(setting, n, v) for n, v in _named_values(f"{key}.{setting}", values)]
        for setting, values in sorted(sweep.items())
    ]
    return [
        (",".join(f"{setting}={n}" for setting, n, _ in combination), tuple((s, v) for s, _, v in combination))
        for combination in itertools.product(*axes)
    ]


def _check_setting(key: str, section: str, setting: str) -> None:
    allowed = study_kind(section).settings
    if setting.split(".", 1)[0] not in allowed:
        raise ConfigError(
            f"{key}.sweep.{section}.{setting}: not a setting a study of {section} sweeps (these change a value: "
            f"{', '.join(allowed) or 'none'})"
        )


def _set(node: dict, setting: str, value: Any) -> None:
    """Set a setting (dotted: sampling.temperature) inside a config section, making the sections on the way."""
    *parents, last = setting.split(".")
    for part in parents:
        node[part] = dict(node.get(part) or {})
        node = node[part]
    node[last] = copy.deepcopy(value)


def _section(config: dict, section: str) -> dict:
    """A config section (metrics.relaxed_perplexity, analysis.resilience, generation), made where unset."""
    node = config
    for part in section.split("."):
        node[part] = dict(node.get(part) or {})
        node = node[part]
    return node


def _variant_config(key, section, values, base, models, benchmarks) -> tuple[dict, dict[str, dict]]:
    """The run's config with a variant's settings applied, and the entries of the models of this study only."""
    config = copy.deepcopy(base)
    if section == "models" and values:
        ((_, (label, other)),) = values
        if isinstance(other, str):
            return config, {}
        config["models"][label] = copy.deepcopy(other)
        return config, {label: other}
    for setting, value in values:
        _check_setting(key, section, setting)
        target = study_kind(section).target
        if target == "models":
            targets = [config["models"][model] for model in models]
        elif target == "benchmarks":
            targets = [config["benchmarks"][benchmark] for benchmark in benchmarks]
        else:
            targets = [_section(config, section)]
        for target in targets:
            _set(target, setting, value)
    return config, {}  # (the baseline: no settings)


def variant_plans(key, variant, section, values, base, main, models, benchmarks, runs, schema) -> tuple:
    """The variant's plan of each run: the run's config with its settings, planned by the run's own code (so its
    defaults and checks are the run's). Run r > 0 rephrases with the variant's seed + r."""
    if section == "models" and values:
        ((_, (label, other)),) = values
        if isinstance(other, str) and other not in main.models:
            raise ConfigError(
                f"{key}.sweep.models: '{other}' is not a key of `models` (a model of this study only is a mapping "
                "variant -> model entry)"
            )
        if not isinstance(other, str) and label in main.models:
            raise ConfigError(f"{key}.sweep.models.{label}: `models` has a model of this name already")
    config, own = _variant_config(key, section, values, base, models, benchmarks)
    try:
        plans = [build_run_plan(config, schema) if values else main]
        for run in range(1, runs):
            seed = plans[0].rephrase_job().sampling.seed + run
            run_config = copy.deepcopy(config)
            _set(_section(run_config, "analysis.resilience"), "sampling.seed", seed)
            plans.append(build_run_plan(run_config, schema))
    except ConfigError as error:
        raise ConfigError(f"{key}: variant {variant}: {error}") from None
    if section not in ("model", "models") or not values:
        return tuple(plans)
    # only the evaluated models change: the same entry may also be the judge or the rephraser, which keep theirs
    if section == "model":
        new = {model: plans[0].models[model] for model in models}
    else:
        ((_, (label, other)),) = values
        spec = main.models[other] if isinstance(other, str) else plans[0].models[label]
        new = dict.fromkeys(models, spec)
    return (replace(main, models={**main.models, **new}, entries={**main.entries, **own}),)
