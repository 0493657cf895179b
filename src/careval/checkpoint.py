"""Run a long job's work in batches, keeping each finished batch beside the output, so a killed job resumes where it stopped.

A job splits its work into batches, and `Checkpoint.run` computes them in order, writing each
finished batch as `<output>.partial/part-<n>.parquet` (written aside, then renamed: a part is whole
or absent). Killed (`kill -9`, a node lost, a wall-time limit), the job loses the batch it was
computing; rerun, it reads the finished parts back and computes the rest. The job writes its
outputs from the parts and only then removes the checkpoint (`discard`), so a job killed between
two outputs resumes with all its batches.

A checkpoint is tied to its work by a fingerprint of everything that decides the outputs (the
requests, the model entry, the sampling settings, the batches); one made for other work (the
config changed since) is removed and the job starts over.

Byte identity. The outputs of a resumed job equal those of an uninterrupted one, byte for byte,
because both compute the same batches (the batch size is in the fingerprint) and both assemble the
outputs from the parts as read back from disk. Within a batch the backend sees exactly what it
would see uninterrupted, so what holds for a rerun holds for a resume: the same machine, software,
dtype and batch settings give the same numbers. Across batch sizes (not across resumes):
log-likelihoods and greedy text can move by float rounding, since the backends group requests by
length within a call and padding changes the rounding (hf/generation.py, Determinism); sampled text does
not, because every request is seeded by (seed, prompt, occurrence of the prompt in the call) and
`batches_keeping_duplicates` keeps every copy of a prompt in one batch, in input order, so each
copy keeps the occurrence number it has in one whole call.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

KEY_FILE = "fingerprint.txt"


def partial_dir(output: Path) -> Path:
    """Where the checkpoint of `output` lies: `<output>.partial/` beside it."""
    return output.with_name(output.name + ".partial")


def fingerprint(**facts: Any) -> str:
    """A digest of what decides a job's outputs (JSON-able facts; sorted keys, so the order written does not count)."""
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def digest(values: Iterable[Any]) -> str:
    """A digest of a sequence (prompts, request rows), for a fingerprint."""
    hasher = hashlib.sha256()
    for value in values:
        hasher.update(json.dumps(value, default=str).encode())
        hasher.update(b"\n")
    return hasher.hexdigest()


def contiguous_batches(n: int, size: int) -> list[list[int]]:
    """0..n-1 in runs of `size`."""
    if size < 1:
        raise ValueError(f"checkpoint batch size must be >= 1, got {size}")
    return [list(range(start, min(start + size, n))) for start in range(0, n, size)]


def batches_keeping_duplicates(keys: Sequence[str], size: int) -> list[list[int]]:
    """Indices in batches of about `size`, every occurrence of a key in the batch of its first, in input order.

    For sampled generation: a prompt's seed depends on how many identical prompts came before it in
    the call, so two copies in two batches would both be "the first" and draw the same text.
    Without repeated keys, these are contiguous_batches.
    """
    if size < 1:
        raise ValueError(f"checkpoint batch size must be >= 1, got {size}")
    groups: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    batches, current = [], []
    for group in groups.values():  # in order of first occurrence
        current.extend(group)
        if len(current) >= size:
            batches.append(sorted(current))
            current = []
    if current:
        batches.append(sorted(current))
    return batches


def input_order(batches: list[list[int]], rows_per_item: int = 1) -> list[int]:
    """Row positions that put the batches' concatenated rows (`rows_per_item` per item) back in input order."""
    position = {item: rank for rank, item in enumerate(i for batch in batches for i in batch)}
    return [position[item] * rows_per_item + k for item in range(len(position)) for k in range(rows_per_item)]


def write_atomic(frame: pl.DataFrame, path: Path) -> None:
    """Write aside, then rename: a reader (or a rerun after a kill) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    frame.write_parquet(scratch)
    os.replace(scratch, path)


class Checkpoint:
    """The finished batches of one output's work; `run` them, write the outputs, then `discard`."""

    def __init__(self, output: Path, key: str, label: str) -> None:
        self.directory = partial_dir(Path(output))
        self.label = label
        self.resumed = 0
        self.computed = 0
        key_file = self.directory / KEY_FILE
        if self.directory.exists():
            found = key_file.read_text().strip() if key_file.is_file() else ""
            if found != key:
                print(
                    f"{label}: checkpoint {self.directory} was made for other inputs or settings; starting over",
                    flush=True,
                )
                shutil.rmtree(self.directory)
        if not key_file.is_file():
            self.directory.mkdir(parents=True, exist_ok=True)
            scratch = self.directory / f".{KEY_FILE}.tmp"
            scratch.write_text(key + "\n")
            os.replace(scratch, key_file)

    def run(self, batches: Sequence[Any], compute: Callable[[Any], pl.DataFrame], schema: dict) -> pl.DataFrame:
        """compute(batch) for each batch not in the checkpoint yet; every batch's rows, in batch order."""
        frames = []
        for number, batch in enumerate(batches):
            part = self.directory / f"part-{number:05d}.parquet"
            if part.is_file():
                self.resumed += 1
            else:
                print(f"{self.label}: batch {number + 1}/{len(batches)} started", flush=True)
                write_atomic(compute(batch), part)
                self.computed += 1
            # read back in both cases: the outputs are made of the same bytes whether resumed or not
            frames.append(pl.read_parquet(part))
        print(
            f"{self.label}: {len(batches)} batches, {self.resumed} from the checkpoint, {self.computed} computed",
            flush=True,
        )
        return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=schema)

    def discard(self) -> None:
        """Remove the checkpoint, once the outputs it was for are written."""
        shutil.rmtree(self.directory, ignore_errors=True)
