"""Loading a transformers model folder: its tokenizer and model on the CPU, in the entry's dtype.

A warm worker (careval.warm) loads a folder once before it forks its jobs (:func:`preload`); a job forked
from it gets that pair from :func:`load_pretrained` without reading the folder again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from ..dtype import NATIVE_BFLOAT16, resolve_dtype

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def torch_dtype(name: str | None) -> Any:
    if name is None or name == "auto":
        return "auto"
    name = resolve_dtype(str(name))  # bfloat16_if_native, where a spec did not pass through ModelSpec.for_job
    try:
        return _DTYPES[str(name).lower()]
    except KeyError:
        raise ValueError(
            f"dtype must be one of float32, bfloat16, float16, auto, {NATIVE_BFLOAT16}; got {name!r}"
        ) from None


# Tokenizers and models a warm worker loaded before forking its jobs (careval.warm, preload below): a job
# forked from it shares their memory and starts without reading the folder. Empty in any other process.
_PRELOADED: dict[tuple, tuple[Any, Any]] = {}


def _folder_state(path: str) -> tuple:
    """What tells one version of a local model folder from another (names, sizes, modification times)."""
    return tuple(sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in os.scandir(path) if f.is_file()))


def _preload_key(path: str, dtype: str | None, trust_remote_code: bool) -> tuple:
    return (os.path.realpath(path), str(torch_dtype(dtype)), bool(trust_remote_code), _folder_state(path))


def load_pretrained(path: str, dtype: str | None = "auto", trust_remote_code: bool = False) -> tuple[Any, Any]:
    """The tokenizer and model of `path` (a local folder or a hub id), the model in `dtype` on the CPU:
    the preloaded pair where this process was forked from a warm worker that loaded the same folder."""
    if _PRELOADED and os.path.isdir(path):
        found = _PRELOADED.get(_preload_key(path, dtype, trust_remote_code))
        if found is not None:
            return found
    check_model_folder(path)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype(dtype), trust_remote_code=trust_remote_code)
    return tokenizer, model.eval()


class ModelFolderError(ValueError):
    """A local model folder transformers cannot read; one line naming the file and the cause."""

    one_line = True  # careval.joblog: the message alone on the console, no traceback


def check_model_folder(path: str) -> None:
    """A local folder's config.json must be JSON: transformers would fail on it deep in a 100-line traceback."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return  # a hub id, or a folder transformers explains itself
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelFolderError(f"{config}: not valid JSON ({error}); prepare or copy the model folder again") from None


def preload(path: str, dtype: str | None = "auto", trust_remote_code: bool = False) -> bool:
    """In a warm worker: load a local folder's tokenizer and model once, for every job forked afterwards
    (load_pretrained). False where the folder is not there (yet); the jobs then load it themselves."""
    if not os.path.isdir(path):
        return False
    key = _preload_key(path, dtype, trust_remote_code)
    if key not in _PRELOADED:
        drop_preloaded(path, dtype)  # an older version of the folder (it was rewritten since)
        _PRELOADED[key] = load_pretrained(path, dtype, trust_remote_code)
    return True


def drop_preloaded(path: str, dtype: str | None = "auto") -> None:
    """Forget what preload() kept of a folder in a dtype (a job forked before keeps its own copy)."""
    wanted = (os.path.realpath(path), str(torch_dtype(dtype)))
    for key in [key for key in _PRELOADED if key[:2] == wanted]:
        del _PRELOADED[key]
