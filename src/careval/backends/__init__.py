"""Model runtimes behind one protocol (base.Backend); build one with :func:`load_backend`.

Importing this package is cheap: torch/transformers load with the hf backend, vLLM only
when a spec asks for it (it is the optional ``gpu`` extra).
"""

from __future__ import annotations

from typing import Any

from careval.schema import with_schema_defaults

from .base import Backend, Sampling

__all__ = ["BACKENDS", "Backend", "Sampling", "load_backend"]

BACKENDS = ("hf", "vllm", "openai")


def load_backend(spec: dict[str, Any]) -> Backend:
    """Build the backend a model spec describes.

    Keys: ``name``, ``path`` (required); ``backend`` ("hf" | "vllm" | "openai");
    ``chat_template`` (bool); ``dtype`` ("float32" | "bfloat16" | "auto" |
    "bfloat16_if_native" (hf: dtype.py)); ``threads`` (int, torch.set_num_threads;
    hf only); ``batch_size`` (int); ``max_length`` (context window; default from the model config);
    ``system_prompt`` (str); ``gpus`` (vllm tensor parallel size, default 1); ``seed``
    (vllm engine seed); ``device`` (hf: "cpu"/"cuda", default cuda if available);
    ``add_bos_token`` (true/false forces add_special_tokens; default: the tokenizer's
    own default, as lm-eval 0.4.13 -- see tokenization.py); ``shared_prefix`` (hf: score
    requests that share a context from one context forward, default true; false = the
    plain path, for comparison -- hf.py); ``vllm_args``
    (dict of extra ``vllm.LLM`` arguments, e.g. enforce_eager, gpu_memory_utilization).
    ``engine_url_file`` (vllm): the address file of the model's shared vLLM server (rule
    vllm_engine): the backend is then a client of that server (vllm_server.py), waiting for it up
    to ``engine_start_timeout`` seconds; ``max_length`` and the engine's settings are the server's.
    ``backend: openai`` (generation only, openai_compat.py): ``path`` is the served model id,
    plus ``base_url``, ``api_key_env`` (the variable holding the key, default OPENAI_API_KEY),
    ``timeout``, ``max_retries``, ``concurrency``, ``config_key`` (where the entry is in the
    config, for messages; default ``models.<name>``).
    Other keys (used elsewhere in the pipeline) are ignored. A key of a config's model entry (backend,
    chat_template, dtype, batch_size, engine_start_timeout, vllm_args) or endpoint (api_key_env,
    concurrency) left out takes the config schema's default, its one home (the pipeline passes every key:
    careval.models.spec.ModelSpec.backend_kwargs).
    """
    if not isinstance(spec, dict):
        raise TypeError(f"model spec must be a mapping, got {type(spec).__name__}")
    missing = [k for k in ("name", "path") if not spec.get(k)]
    if missing:
        raise ValueError(f"model spec {spec.get('name', '?')!r} lacks {', '.join(missing)}")
    spec = {**with_schema_defaults({}, "model"), **with_schema_defaults({}, "endpoint"), **spec}
    kind = spec["backend"]
    if kind == "openai":
        from .openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(
            name=str(spec["name"]),
            model=str(spec["path"]),
            base_url=spec.get("base_url"),
            api_key_env=spec["api_key_env"],
            system_prompt=spec.get("system_prompt") or None,
            timeout=float(spec.get("timeout", 120)),
            max_retries=int(spec.get("max_retries", 4)),
            concurrency=int(spec["concurrency"]),
            config_key=spec.get("config_key"),
        )
    common: dict[str, Any] = dict(
        name=str(spec["name"]),
        path=str(spec["path"]),
        chat_template=bool(spec["chat_template"]),
        dtype=spec["dtype"],
        batch_size=int(spec["batch_size"]),
        max_length=int(spec["max_length"]) if spec.get("max_length") else None,
        system_prompt=spec.get("system_prompt") or None,
        add_bos_token=spec.get("add_bos_token"),
    )
    if kind == "hf":
        from .hf import HFBackend

        # shared_prefix: the HFBackend default (true) unless the spec says otherwise
        extra: dict[str, Any] = {"shared_prefix": bool(spec["shared_prefix"])} if "shared_prefix" in spec else {}
        return HFBackend(**common, threads=spec.get("threads"), device=spec.get("device"), **extra)
    if kind == "vllm" and spec.get("engine_url_file"):
        # a job the model's shared engine serves (rule vllm_engine): no engine here, no vLLM import
        from .vllm_server import VLLMServerBackend

        return VLLMServerBackend(
            name=common["name"],
            path=common["path"],
            url_file=spec["engine_url_file"],
            chat_template=common["chat_template"],
            system_prompt=common["system_prompt"],
            batch_size=common["batch_size"],
            add_bos_token=common["add_bos_token"],
            start_timeout=float(spec["engine_start_timeout"]),
        )
    if kind == "vllm":
        from .vllm import VLLMBackend  # raises the one-line install hint without vLLM

        return VLLMBackend(
            **common,
            gpus=int(spec.get("gpus", 1)),
            seed=int(spec.get("seed", 1234)),
            **dict(spec["vllm_args"]),
        )
    raise ValueError(f"model spec {spec['name']!r}: backend must be one of {BACKENDS}, got {kind!r}")
