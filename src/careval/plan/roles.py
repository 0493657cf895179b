"""The models a run loads besides the evaluated ones, each a name of `models` or an inline entry of its own: the judge
(or a jury's judges), the resilience analysis' rephraser, the CareQA build's translator and rephraser."""

from __future__ import annotations

from dataclasses import replace

from careval.config import ConfigError, schema_part
from careval.models.spec import ModelSpec, endpoint_spec


def inline_model_name(entry: dict) -> str:
    """An inline entry (e.g. the paper's prometheus-7b-v2.0) is named after the last part of its source (a served
    one after its served model's id)."""
    if "endpoint" in entry:
        return entry["endpoint"]["model"].rstrip("/").rsplit("/", 1)[-1]
    return entry["source"].split(":", 1)[1].rstrip("/").rsplit("/", 1)[-1]


def _named_or_inline(value, models: dict[str, ModelSpec], key: str, spec_of) -> ModelSpec:
    """A model given by name (an entry of `models`, then also evaluated) or as an inline entry of its own."""
    if isinstance(value, dict):
        name = inline_model_name(value)
        longest = schema_part("models")["propertyNames"]["maxLength"]
        if len(name) > longest:  # its name, like a key of `models`, names folders and files
            raise ConfigError(
                f"{key}.source: the model's name '{name[:40]}...' ({len(name)} characters, the source's last part) "
                f"is longer than the {longest} characters a name may have (it names folders and files)"
            )
        return spec_of(name, value, key)
    if not value:
        raise ConfigError(f"{key} is not set (a name of `models` or a model entry)")
    if value not in models:
        raise ConfigError(f"{key}: '{value}' is not a key of `models` (have: {', '.join(models)})")
    return models[value]


def configured_judge(config: dict, models: dict[str, ModelSpec], spec_of) -> ModelSpec | None:
    judge = config["metrics"].get("judge")
    if not judge:
        raise ConfigError(
            "metrics.judge is not set, but the judge family is computed: set metrics.judge.model "
            "or add judge to metrics.skip"
        )
    if judge.get("models"):
        return None  # a jury (_jury)
    return _named_or_inline(judge.get("model"), models, "metrics.judge.model", spec_of)


def configured_jury(config: dict, models: dict[str, ModelSpec], spec_of) -> dict[str, ModelSpec]:
    """metrics.judge.models: each judge a name of `models` or an inline entry; {} under a single `model:`."""
    judge = config["metrics"]["judge"]
    jury: dict[str, ModelSpec] = {}
    for k, value in enumerate(judge.get("models") or []):
        spec = _named_or_inline(value, models, f"metrics.judge.models[{k}]", spec_of)
        if spec.name in jury:
            raise ConfigError(f"metrics.judge.models[{k}]: judge '{spec.name}' is listed twice")
        jury[spec.name] = spec
    unknown = {
        name: [m for m in members if m not in models]
        for name, members in (judge.get("same_family") or {}).items()
        if name not in jury or any(m not in models for m in members)
    }
    for name, missing in unknown.items():
        if name not in jury:
            raise ConfigError(f"metrics.judge.same_family: '{name}' is not a judge of metrics.judge.models")
        raise ConfigError(f"metrics.judge.same_family.{name}: {', '.join(missing)} is not a key of `models`")
    return jury


def configured_rephraser(config: dict, models: dict[str, ModelSpec], spec_of) -> ModelSpec:
    return _named_or_inline(
        config["analysis"]["resilience"]["rephraser"], models, "analysis.resilience.rephraser", spec_of
    )


def configured_careqa_llms(config: dict, models: dict[str, ModelSpec], resources: dict) -> dict[str, ModelSpec]:
    """The CareQA build's translator and rephraser: a name of `models` or an OpenAI-compatible endpoint."""
    specs = {}
    for step in ("translator", "rephraser"):
        settings = config["careqa"].get(step)
        if settings is None:
            continue
        key = f"careqa.{step}"
        if settings.get("endpoint"):
            specs[step] = endpoint_spec(
                f"{step}:{settings['endpoint']['model']}",
                settings["endpoint"],
                settings.get("system_prompt"),
                resources,
                key=f"{key}.endpoint",
            )
            continue
        name = settings["model"]
        if name not in models:
            raise ConfigError(f"{key}.model: '{name}' is not a key of `models` (have: {', '.join(models)})")
        spec = models[name]
        if settings.get("system_prompt"):
            spec = replace(spec, system_prompt=settings["system_prompt"])
        specs[step] = spec
    return specs
