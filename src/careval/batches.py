"""How an LLM job cuts its work into the batches it hands its model: fixed by the requests alone, so that the same
requests are the same batches in every run (the request cache's unit: careval.backends.cached).

Batches are runs of `request_batch` samples from the start of the job's list (`contiguous_batches`): raising a
benchmark's `limit` keeps every earlier whole batch as it was and adds batches after them; a run with the cache and
one without hand the model the very same calls, so their outputs are the same bytes.

Sampled text: every request is seeded by (seed, prompt, occurrence of the prompt in the call), and
`batches_keeping_duplicates` keeps every copy of a prompt in one batch, in input order, so each copy keeps the
occurrence number it has in one whole call. Log-likelihoods and greedy text can move by float rounding across
batch sizes (not across runs): the backends group requests by length within a call and padding changes the
rounding (hf/generation.py, Determinism); that is why `request_batch` is a value setting, not an execution one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl


def contiguous_batches(n: int, size: int) -> list[list[int]]:
    """0..n-1 in runs of `size`."""
    if size < 1:
        raise ValueError(f"request_batch must be >= 1, got {size}")
    return [list(range(start, min(start + size, n))) for start in range(0, n, size)]


def batches_keeping_duplicates(keys: Sequence[str], size: int) -> list[list[int]]:
    """Indices in batches of about `size`, every occurrence of a key in the batch of its first, in input order.

    For sampled generation: a prompt's seed depends on how many identical prompts came before it in
    the call, so two copies in two batches would both be "the first" and draw the same text.
    Without repeated keys, these are contiguous_batches.
    """
    if size < 1:
        raise ValueError(f"request_batch must be >= 1, got {size}")
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
