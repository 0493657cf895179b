"""Which backend and decoding a CareQA LLM step (translator, rephraser) uses, from the `careqa` config."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from careval.backends.base import Sampling
from careval.inference import backend_spec


def llm_spec(step: dict, models: dict, models_dir: Path | str, threads: int = 1, name: str = "careqa") -> dict:
    """A load_backend spec: an OpenAI-compatible `endpoint`, or a `model` of the config's `models`."""
    endpoint = step.get("endpoint")
    if endpoint:
        return {
            "name": f"{name}:{endpoint['model']}",
            "backend": "openai",
            "path": endpoint["model"],
            "base_url": endpoint.get("base_url"),
            "api_key_env": endpoint.get("api_key_env", "OPENAI_API_KEY"),
            "concurrency": endpoint.get("concurrency", 4),
            "system_prompt": step.get("system_prompt"),
            "config_key": f"careqa.{name}.endpoint",
        }
    model = step.get("model")
    if model not in models:
        raise ValueError(f"careqa {name}: model {model!r} is not a key of `models` (known: {', '.join(models)})")
    spec = backend_spec(model, models[model], Path(models_dir), threads)
    if step.get("system_prompt"):
        spec["system_prompt"] = step["system_prompt"]
    return spec


def llm_sampling(step: dict) -> Sampling:
    # Greedy by default: a rebuild must give the same dataset.
    return Sampling(
        max_new_tokens=int(step.get("max_new_tokens", 256)),
        temperature=float(step.get("temperature", 0.0)),
        seed=int(step.get("seed", 1234)),
    )


def as_backend(backend_or_spec):
    """A backend as given (tests pass one), or loaded from a spec (the workflow passes llm_spec's dict)."""
    if isinstance(backend_or_spec, dict):
        from careval.backends import load_backend

        return load_backend(backend_or_spec)
    return backend_or_spec


def verdict_sampling(sampling: Sampling) -> Sampling:
    # A selection or a YES/NO verdict is a word or two; a chat model may wrap it in a short phrase.
    return replace(sampling, max_new_tokens=min(sampling.max_new_tokens, 16))
