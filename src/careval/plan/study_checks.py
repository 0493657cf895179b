"""The studies of a config (`studies:`, careval.plan.studies) checked at the door, before the schema and before any variant
is planned: one line per mistake naming the study, the key and the cause, where the schema alone would say "is not
valid under any of the given schemas" after the whole sweep, or the study would run jobs that change nothing.

* a sweep's section that is none (`modle`): named, with the sections there are;
* a section with no setting (`sweep: {model: {}}`), a setting with no values (`chat_template: []`), values that are
  neither a list nor a mapping name -> value;
* a setting that changes no value (docs/studies.md): the generation's `seed` or `top_p` where every variant decodes
  greedily (temperature 0), which runs the baseline's jobs again under other names;
* a sweep whose every value is the run's own setting: no variant to compare with the baseline.

:func:`check_studies` is the one call (careval.plan.build_plan); careval.plan.studies checks the rest once each variant's
plan is built (two variants that run the same jobs, a setting the run itself would refuse).
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from careval.config import ConfigError, prepare_config
from careval.plan.study_kinds import STUDY_KINDS

# what each section's settings are, for the example in a line
EXAMPLES = {
    "model": "chat_template: [false, true]",
    "benchmark": "mcqa_style: [letters, cloze]",
    "generation": "temperature: [0.0, 0.7]",
    "analysis.resilience": "k: [2, 4]",
}
# generation settings that only a sampled decoding reads: at temperature 0 (greedy) they change no value
SAMPLED_ONLY = ("seed", "top_p")


def check_studies(config: dict) -> None:
    """Every study of `config` (raw, as read) as the module docstring says; a ConfigError names the study and key."""
    studies = config.get("studies")
    if not isinstance(studies, dict) or not studies:
        return
    filled: dict | None = None
    for name, study in studies.items():
        if not isinstance(study, dict) or not isinstance(study.get("sweep"), dict) or len(study["sweep"]) != 1:
            continue  # the schema's own line (a study without one sweep of one section)
        ((section, sweep),) = study["sweep"].items()
        key = f"studies.{name}.sweep"
        _check_section(key, str(section))
        if section == "models":
            if sweep in ({}, [], None):
                raise ConfigError(f"{key}.models: no model to put in place (a list of names of `models`)")
            continue
        settings = _settings(f"{key}.{section}", section, sweep)
        if filled is None:  # the run's own settings, the schema's defaults filled (the studies aside)
            filled = prepare_config({**copy.deepcopy(config), "studies": {}})
        _check_changes(f"{key}.{section}", section, settings, study, filled)


def sections() -> tuple[str, ...]:
    """The sections a study sweeps: the registered study kinds' (a metric family's as metrics.<family>), a
    plugin's among them (careval.plugins)."""
    return tuple("metrics.<family>" if section == "metrics" else section for section in STUDY_KINDS)


def _check_section(key: str, section: str) -> None:
    if section in STUDY_KINDS or section.startswith("metrics."):
        return
    close = difflib.get_close_matches(section, [s for s in sections() if "<" not in s], n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise ConfigError(f"{key}: '{section}' is not a section a study sweeps ({hint}sections: {', '.join(sections())})")


def _settings(key: str, section: str, sweep: Any) -> dict[str, list]:
    """setting -> its values (a list's, or a mapping's by name), each setting with one value at least."""
    example = EXAMPLES.get(section, "a setting: [value, value]")
    if not isinstance(sweep, dict) or not sweep:
        what = "no setting to sweep" if sweep in ({}, [], None) else f"not a mapping setting -> values ({sweep!r:.40})"
        raise ConfigError(f"{key}: {what} (e.g. {example})")
    settings = {}
    for setting, values in sweep.items():
        if isinstance(values, dict):
            values = list(values.values())
        if not isinstance(values, list):
            raise ConfigError(
                f"{key}.{setting}: give the values as a list or as a mapping name -> value, not "
                f"{type(values).__name__} (e.g. {example})"
            )
        if not values:
            raise ConfigError(f"{key}.{setting}: no values to sweep (e.g. {example})")
        settings[str(setting)] = values
    return settings


def _check_changes(key: str, section: str, settings: dict[str, list], study: dict, filled: dict) -> None:
    """A sampled-only setting at temperature 0, and a sweep whose every value is the run's own."""
    if section == "generation":
        temperatures = settings.get("temperature", [filled["generation"]["temperature"]])
        for setting in SAMPLED_ONLY:  # (a setting the kind does not sweep is named as such by the plan)
            swept = setting in settings and setting in STUDY_KINDS[section].settings
            if swept and all(_is_zero(t) for t in temperatures):
                raise ConfigError(
                    f"{key}.{setting}: changes no value: every variant decodes greedily (generation.temperature 0), "
                    f"which never draws from the {setting}; sweep it with a temperature above 0"
                )
    own = _own_settings(section, study, filled)
    if own is None:
        return
    for values in own.values():
        if any(setting not in values for setting in settings):
            return  # a setting the schema or the study will name
        if any(any(v != values[setting] for v in swept) for setting, swept in settings.items()):
            return  # some variant differs from this one's own setting
    shown = ", ".join(f"{setting}={_shown(next(iter(own.values()))[setting])}" for setting in settings)
    whose = f" of {', '.join(own)}" if section == "model" else ""
    raise ConfigError(
        f"{key}: every value is the run's own setting{whose} ({shown}): no variant differs from the baseline"
    )


def _own_settings(section: str, study: dict, filled: dict) -> dict[str, dict] | None:
    """The run's own value of each swept setting, per model of the study (section model) or once; None where the
    baseline's value is not a setting of the config itself (a benchmark entry's, a catalogue's)."""
    if section == "model":
        names = study.get("models") or list(filled["models"])
        if not all(isinstance(n, str) and n in filled["models"] for n in names):
            return None  # the study names the unknown model
        return {name: filled["models"][name] for name in names}
    node: Any = filled
    for part in section.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return {section: node} if section != "benchmark" and isinstance(node, dict) else None


def _is_zero(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)
