"""The request cache's store: one file per entry, named by the digest of what decides its numbers, safe to share.

An entry is the result of one backend call (a batch of requests: careval.backends.cached). Its key is a
sha256 over the model's facts and the call (careval.backends.model_facts, careval.backends.cached); the store only
keeps bytes:

* layout: ``<dir>/<key[:2]>/<key>``; a file is one header line ``careval-cache 1 <sha256 of the body>
  <body bytes>`` and a JSON body.
* written once, aside (``.<key>.<host>.<pid>.<random>.tmp`` in the same folder), then renamed over the entry: on
  POSIX filesystems, and on NFS and Lustre, a rename within a folder is atomic, so a reader sees the whole entry
  or none. Many jobs on many nodes may write the same entry at once: each writes the same bytes, and the last
  rename wins. No lock, no database. (No fsync: an entry a power cut left short fails its checksum below.)
* read: a file whose length or checksum does not match its header (a copy cut short, a disk that lost a block),
  or whose value does not fit the call that asks for it (careval.backends.cached checks the count and type of
  values per request: an entry edited by hand, a writer's bug), is a torn entry: one line naming the file, the file
  removed, and the caller recomputes it. Never read as a result.
* a folder that cannot be written (read-only, full): the job's results are right, its entries are not kept; one
  warning line per folder and process, not one per entry.
* a hit touches the file (its modification time is its last use): ``prune --older-than`` drops what no run used
  lately, ``--max-size`` the least recently used first (careval.cli: ``careval cache stats|prune``).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"careval-cache 1"


@dataclass(frozen=True)
class CacheStats:
    entries: int
    bytes: int
    oldest: float | None  # the least recent use (modification time), seconds since the epoch
    newest: float | None


class RequestCache:
    """A folder of cache entries (the module docstring)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def get(self, key: str) -> Any | None:
        """The entry's value, or None where there is none or it is torn (a warning; the file is removed)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        value = _decode(data)
        if value is _TORN:
            self.discard(key, f"{len(data)} bytes")
            return None
        try:
            os.utime(path)  # its last use, for prune
        except OSError:
            pass
        return value

    def discard(self, key: str, why: str) -> None:
        """A torn entry (`why`: what is wrong with it): named in one line, removed; the caller recomputes it."""
        path = self.path(key)
        print(f"cache: {path} is a torn entry ({why}); removed and recomputed", flush=True)
        try:
            path.unlink()
        except OSError:
            pass

    def put(self, key: str, value: Any) -> None:
        """Write the entry aside and rename it into place (the module docstring)."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".{key}.{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            scratch.write_bytes(_encode(value))
            os.replace(scratch, path)
        finally:
            if scratch.exists():
                scratch.unlink()

    def keep(self, key: str, value: Any) -> bool:
        """put, where the folder can be written: a folder that cannot (read-only, full, not a folder) is one warning
        line per folder and process, and the caller goes on with its result (the module docstring)."""
        try:
            self.put(key, value)
            return True
        except OSError as error:
            if str(self.directory) not in _UNWRITABLE:
                _UNWRITABLE.add(str(self.directory))
                print(
                    f"careval warning: request cache {self.directory} cannot be written ({error.strerror or error}): "
                    "this job's calls are computed and not kept (no further warning)",
                    flush=True,
                )
            return False

    def entries(self) -> list[Path]:
        """Every entry file (no file being written)."""
        if not self.directory.is_dir():
            return []
        return [p for p in self.directory.glob("??/*") if p.is_file() and not p.name.startswith(".")]

    def stats(self) -> CacheStats:
        sizes, times = [], []
        for path in self.entries():
            try:
                state = path.stat()
            except FileNotFoundError:  # pruned meanwhile
                continue
            sizes.append(state.st_size)
            times.append(state.st_mtime)
        return CacheStats(len(sizes), sum(sizes), min(times, default=None), max(times, default=None))

    def prune(
        self, older_than: float | None = None, max_bytes: int | None = None, now: float | None = None
    ) -> tuple[int, int]:
        """Remove the entries unused for `older_than` seconds, then the least recently used until the store holds at
        most `max_bytes`; (entries removed, bytes freed). A file being written elsewhere is not an entry yet."""
        now = time.time() if now is None else now
        found = []
        for path in self.entries():
            try:
                state = path.stat()
            except FileNotFoundError:
                continue
            found.append((state.st_mtime, state.st_size, path))
        found.sort()
        removed = freed = 0
        total = sum(size for _, size, _ in found)
        for used, size, path in found:
            stale = older_than is not None and now - used > older_than
            over = max_bytes is not None and total > max_bytes
            if not (stale or over):
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed, freed, total = removed + 1, freed + size, total - size
        for scratch in self.directory.glob("??/.*.tmp") if self.directory.is_dir() else []:
            try:  # a writer killed between its write and its rename, a day ago at least
                if now - scratch.stat().st_mtime > 86400:
                    scratch.unlink()
            except FileNotFoundError:
                pass
        return removed, freed


_TORN = object()
# the folders this process found it cannot write (RequestCache.keep: one warning each)
_UNWRITABLE: set[str] = set()


def _encode(value: Any) -> bytes:
    body = json.dumps(value, separators=(",", ":")).encode("utf-8")
    return MAGIC + b" " + hashlib.sha256(body).hexdigest().encode() + b" " + str(len(body)).encode() + b"\n" + body


def _decode(data: bytes) -> Any:
    header, _, body = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 4 or b" ".join(parts[:2]) != MAGIC or not parts[3].isdigit() or int(parts[3]) != len(body):
        return _TORN
    if hashlib.sha256(body).hexdigest().encode() != parts[2]:
        return _TORN
    return json.loads(body)


def digest(value: Any) -> str:
    """The key of a JSON-able value: sha256 of its canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


AGE_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
SIZE_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_age(text: str) -> float:
    """'30d', '12h', '45m', '90s' in seconds; ValueError with one line otherwise: a number without its unit (30 days
    or 30 seconds?), a negative or non-finite one (which would drop every entry)."""
    return _parse(text, AGE_UNITS, "an age", "30d, 12h, 45m, 90s")


def parse_size(text: str) -> int:
    """'10G', '500M', '64K' in bytes (B: bytes); ValueError with one line otherwise (as parse_age)."""
    return int(_parse(text, {**SIZE_UNITS, "B": 1}, "a size", "50G, 500M, 64K, 100B"))


def _parse(text: str, units: dict[str, int], what: str, examples: str) -> float:
    text = text.strip()
    unit = text[-1:].upper() if units is not AGE_UNITS else text[-1:].lower()
    try:
        number = float(text[:-1])
    except ValueError:
        number = None
    if unit not in units or number is None:
        try:
            float(text)
            why = "a number needs its unit"
        except ValueError:
            why = "not a number with a unit"
        raise ValueError(f"not {what}: {text!r}: {why} ({examples})")
    if not number >= 0 or number == float("inf"):
        raise ValueError(f"not {what}: {text!r}: it must be zero or more ({examples})")
    return number * units[unit]
