"""The typed model spec: one model entry of a config, with its size class and job resources resolved, built once.

Every job that loads a model (inference, Relaxed Perplexity, self-consistency, the judge, the
rephraser, the CareQA translator and rephraser) gets its backend from a ModelSpec, and the rule's
`gpu`/`mem_mb`/`runtime`/`threads` resources are read from the same spec: the GPUs a job asks SLURM
for are the GPUs its backend uses (vLLM's tensor-parallel size). Defaults come from the config
schema only (careval.config.with_schema_defaults); nothing here writes a default of its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from careval.backends.dtype import NATIVE_BFLOAT16, resolve_dtype
from careval.config import ConfigError, with_schema_defaults
from careval.models.prepare import needs_preparation, resolve_model_path
from careval.models.source import ModelSourceError

# Resources a job that loads a model asks for: the entry's own, else its size class's, else the
# config's `resources.llm_<key>` (whose defaults are the schema's).
RESOURCE_KEYS = ("gpus", "mem_mb", "runtime", "threads")


@dataclass(frozen=True)
class ModelSpec:
    """What a backend needs to load one model, and what a job loading it asks the scheduler for."""

    name: str
    backend: str  # hf | vllm | openai
    path: str  # a local folder, a hub repo id, or (openai) the served model id
    chat_template: bool
    system_prompt: str | None
    dtype: str
    batch_size: int
    max_length: int | None
    gpus: int
    mem_mb: int
    runtime: int  # minutes per job
    threads: int
    label: str
    prepared: bool  # built from PyPI wheels into models_dir by the prepare_model rule
    # vllm only: per_job (each job its own engine) | shared (one server per model and run: rule vllm_engine)
    engine: str
    engine_python: str | None  # the python that runs the shared engine's server (None: Snakemake's)
    engine_start_timeout: int  # seconds a served job waits for the server
    vllm_args: dict[str, Any]  # extra engine arguments
    # openai backend only: where and how to reach the server
    endpoint: dict[str, Any] = field(default_factory=dict)
    # set by for_job in a job the shared engine serves: the server's address file (rule vllm_engine's output)
    engine_url_file: str | None = None

    @property
    def shared_engine(self) -> bool:
        return self.engine == "shared"

    def for_job(
        self, threads: int | None = None, gpus: int | None = None, engine_url_file: str | None = None
    ) -> ModelSpec:
        """The spec as a job runs it: the threads and GPUs the scheduler actually gave the job, the address
        file of the shared engine that serves it (if any), and an hf model's dtype as this machine runs it
        (`bfloat16_if_native` resolved: careval.backends.dtype)."""
        changes: dict[str, Any] = {
            key: int(value) for key, value in (("threads", threads), ("gpus", gpus)) if value is not None
        }
        if self.backend == "hf":
            changes["dtype"] = resolve_dtype(self.dtype)  # imports torch only for bfloat16_if_native
        if engine_url_file:
            changes["engine_url_file"] = str(engine_url_file)
        return replace(self, **changes)

    def backend_kwargs(self) -> dict[str, Any]:
        """The mapping careval.backends.load_backend takes, every key explicit."""
        dropped = ("endpoint", "label", "prepared", "engine", "engine_python")
        spec = {key: value for key, value in asdict(self).items() if key not in dropped}
        spec.update(self.endpoint)
        return spec

    def describe(self) -> str:
        return f"{self.name} ({self.backend}, {self.path}, gpus={self.gpus}, dtype={self.dtype})"


ENGINE_KEYS = ("engine", "engine_python", "engine_start_timeout", "vllm_args")


def engine_settings(entry: dict) -> dict[str, Any]:
    """How a model entry's engine runs (the schema's defaults where the entry says nothing)."""
    entry = with_schema_defaults(entry, "model")
    return {key: dict(entry[key]) if key == "vllm_args" else entry[key] for key in ENGINE_KEYS}


def model_spec(
    name: str,
    entry: dict,
    *,
    models_dir: Path | str,
    model_sizes: dict | None = None,
    resources: dict | None = None,
    key: str | None = None,
) -> ModelSpec:
    """The spec of one config model entry (defaults filled from the schema; `key` names it in errors,
    e.g. `models.<name>` or `metrics.judge.model`)."""
    key = key or f"models.{name}"
    entry = with_schema_defaults(entry, "model")
    size_name = entry.get("size")
    sizes = model_sizes or {}
    if size_name is not None and size_name not in sizes:
        raise ConfigError(f"{key}.size: '{size_name}' is not a key of model_sizes (have: {', '.join(sizes) or 'none'})")
    size = sizes.get(size_name, {})
    job_defaults = with_schema_defaults(resources or {}, "resources")
    resolved = {k: entry.get(k, size.get(k, job_defaults[f"llm_{k}"])) for k in RESOURCE_KEYS}
    try:
        path = resolve_model_path(name, entry, Path(models_dir))
        prepared = needs_preparation(entry, name)
    except ModelSourceError as error:
        # the library names the entry as models.<name>; an inline judge or rephraser lives elsewhere
        message, default_key = str(error), f"models.{name}"
        raise ConfigError(key + message[len(default_key) :] if message.startswith(default_key) else message) from None
    if entry["engine"] == "shared" and entry["backend"] != "vllm":
        raise ConfigError(f"{key}.engine: 'shared' needs backend: vllm (this entry's backend is {entry['backend']})")
    if entry["dtype"] == NATIVE_BFLOAT16 and entry["backend"] != "hf":
        raise ConfigError(
            f"{key}.dtype: '{NATIVE_BFLOAT16}' is for backend: hf (vLLM picks its own: use bfloat16 or auto)"
        )
    return ModelSpec(
        name=name,
        backend=entry["backend"],
        **engine_settings(entry),
        path=path,
        chat_template=entry["chat_template"],
        system_prompt=entry.get("system_prompt"),
        dtype=entry["dtype"],
        batch_size=entry["batch_size"],
        max_length=entry.get("max_length"),
        label=entry.get("label") or name,
        prepared=prepared,
        **{k: int(v) for k, v in resolved.items()},
    )


def endpoint_spec(
    name: str, endpoint: dict, system_prompt: str | None = None, resources: dict | None = None, key: str | None = None
) -> ModelSpec:
    """An OpenAI-compatible server (e.g. the paper's GPT-4 translator): generation only, no GPU of its own.
    `key` names the endpoint's place in the config in its errors (e.g. careqa.translator.endpoint)."""
    endpoint = with_schema_defaults(endpoint, "endpoint")
    job = with_schema_defaults(resources or {}, "resources")
    return ModelSpec(
        name=name,
        backend="openai",
        path=endpoint["model"],
        chat_template=False,
        system_prompt=system_prompt,
        dtype="auto",
        batch_size=1,
        max_length=None,
        gpus=0,
        mem_mb=job["llm_mem_mb"],
        runtime=job["llm_runtime"],
        threads=job["llm_threads"],
        label=endpoint["model"],
        prepared=False,
        **engine_settings({}),
        endpoint={
            **{k: endpoint[k] for k in ("base_url", "api_key_env", "concurrency") if k in endpoint},
            "config_key": key or f"models.{name}",
        },
    )


def job_spec(snakemake: Any) -> ModelSpec:
    """In a rule's script: the ModelSpec of `params.spec` with the threads and GPUs the job got and, for a
    job the model's shared engine serves, that engine's address file (input `engine`, rule vllm_engine)."""
    engine = getattr(snakemake.input, "engine", None)  # a path, or [] for a model with its own engine per job
    return ModelSpec(**snakemake.params.spec).for_job(
        snakemake.threads, snakemake.resources.gpu, engine_url_file=str(engine) if engine else None
    )
