"""torch's thread count is process-wide: a test that changes it (or loads a backend, which sets its spec's threads)
gives the later tests of its worker theirs back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(threads: int | None = None) -> Iterator[None]:
    """Inside: `threads` torch threads (None: as they are, for a backend to set); after: the count from before."""
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
