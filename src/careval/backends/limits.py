"""An endpoint's limits across every process that sends it requests (careval.backends.http_client).

Several jobs of a run send requests to the same served model at once (its benchmarks, the judge, the rephraser, a
CareQA step), and so may two runs sharing a cache folder; a server's or a provider's limits are on all of them
together. So the endpoint's ``max_concurrency``, ``requests_per_minute`` and ``tokens_per_minute`` are held in a small
folder every such process shares, one per endpoint (its key: the base URL and the served model),
``<resources.cache_dir>/limits/<digest>/`` beside the budget's ledger (``spent/``): on the machine's or the cluster's
shared disk, where every job of the run and every run of the cache folder find it, with POSIX locks (``flock``; a
cluster filesystem must support them, as for the ledger):

* Concurrency: ``slot-<i>.lock`` for i < max_concurrency; a request in flight holds one under an exclusive ``flock``
  (one open file per request, so the threads of one job exclude each other too). The kernel lets go of a dead
  process's locks: a job killed mid-request frees its slots at once; nothing counts slots that a crash could leave
  taken.
* Rates: ``rate.bin``, the requests let go in the last window, one record each (when, tokens: its prompt and the most
  it may generate), read, pruned and appended to under an exclusive ``flock``. A request waits until it fits both
  limits over the window (a sliding window, not a bucket: no minute ever holds more than the limit). A request counts
  for the window and a second more (a minute and a second) from when it is let go, so that a server counting from
  its arrival (a request let go earlier may arrive later) sees no more either. A request larger than the whole token limit goes alone, in an empty window.
* Every try counts (a retry is a request the server counts too), and the slot is taken before the rate's turn, so the
  request is let go the moment it is counted.

A process whose entry sets lower limits than another's waits for its own; the folder's ``endpoint.json`` names the
endpoint for a reader. Without a folder (a client built outside a run: a test's, a CareQA step's), :class:`RateLimit`
holds the rates for the one process.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

RECORD = struct.Struct("<dq")  # when (seconds since the epoch), tokens
POLL_S = 0.05  # how often a request waiting for a slot looks again
MOST_WAIT_S = 1.0  # the longest a request waiting for its rate's turn sleeps before it looks again
SLACK_S = 1.0  # how much longer than the window a request counts (the spread of its arrival at the server)


def endpoint_folder(root: Path | str, base_url: str, model: str) -> Path:
    """The limits' folder of an endpoint under `root` (<resources.cache_dir>/limits)."""
    identity = json.dumps([base_url.rstrip("/"), model])
    return Path(root) / hashlib.sha256(identity.encode()).hexdigest()[:16]


class SharedLimits:
    """At most `slots` requests in flight, `requests` requests and `tokens` tokens in any `window` seconds, over every
    process using `folder` (the module docstring). None: no such limit. Thread-safe; `clock`: the wall clock shared by
    the processes (a test's own where it moves time itself)."""

    def __init__(
        self,
        folder: Path | str,
        slots: int,
        requests: int | None = None,
        tokens: int | None = None,
        *,
        window: float = 60.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        describe: dict | None = None,
    ) -> None:
        self.folder, self.slots, self.requests, self.tokens = Path(folder), max(1, int(slots)), requests, tokens
        self.window, self.span, self.clock, self.sleep = float(window), float(window) + SLACK_S, clock, sleep
        self.folder.mkdir(parents=True, exist_ok=True)
        if describe is not None and not (self.folder / "endpoint.json").exists():
            (self.folder / "endpoint.json").write_text(json.dumps(describe) + "\n")
        self._rate_path = self.folder / "rate.bin"
        open(self._rate_path, "a+b").close()  # a folder this process cannot write: an OSError here, not mid-request
        self._lock = threading.Lock()  # one reader-writer of rate.bin per process at a time (flock is per file)

    # ------------------------------------------------------------------ concurrency
    @contextmanager
    def slot(self) -> Iterator[float]:
        """Hold one of the endpoint's slots while the block runs; yields the seconds waited for it."""
        start = time.monotonic()
        handle = self._take_slot()
        try:
            yield time.monotonic() - start
        finally:
            try:
                fcntl.flock(handle, fcntl.LOCK_UN)
            finally:
                os.close(handle)

    def _take_slot(self) -> int:
        first = random.randrange(self.slots)  # spread the tries: fewer collisions on slot 0
        while True:
            for k in range(self.slots):
                path = self.folder / f"slot-{(first + k) % self.slots}.lock"
                handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)
                    continue
                return handle
            time.sleep(POLL_S)

    def in_flight(self) -> int:
        """The slots held now (by any process): for the log and the tests."""
        held = 0
        for i in range(self.slots):
            handle = os.open(self.folder / f"slot-{i}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
            except BlockingIOError:
                held += 1
            finally:
                os.close(handle)
        return held

    # ------------------------------------------------------------------ rates
    def acquire(self, tokens: int) -> float:
        """Wait until a request of `tokens` fits the window's limits, and count it; the seconds waited."""
        if self.requests is None and self.tokens is None:
            return 0.0
        start = self.clock()
        while True:
            wait = self._try(int(tokens))
            if wait is None:
                return self.clock() - start
            self.sleep(min(MOST_WAIT_S, max(POLL_S, wait)))

    def _try(self, tokens: int) -> float | None:
        """Count the request where it fits (None), else how long until the oldest record lapses."""
        with self._lock, open(self._rate_path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                data = handle.read()
                now = self.clock()
                records = [
                    r for r in RECORD.iter_unpack(data[: len(data) - len(data) % RECORD.size]) if now - r[0] < self.span
                ]
                used = sum(n for _, n in records)
                fits = (self.requests is None or len(records) < self.requests) and (
                    self.tokens is None or not records or used + tokens <= self.tokens
                )
                if not fits:
                    return max(0.0, self.span - (now - min(t for t, _ in records)))
                records.append((now, tokens))
                handle.seek(0)
                handle.truncate()
                handle.write(b"".join(RECORD.pack(*r) for r in records))
                handle.flush()
                return None
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class RateLimit:
    """At most `requests` requests and `tokens` tokens in any 60 seconds (None: no limit); thread-safe."""

    WINDOW = 60.0

    def __init__(
        self,
        requests: int | None,
        tokens: int | None,
        clock: Callable[[], float] = time.monotonic,
        window: float = WINDOW,
    ) -> None:
        self.requests, self.tokens, self.clock, self.window = requests, tokens, clock, float(window)
        self._sent: deque[tuple[float, int]] = deque()
        self._lock = threading.Condition()

    def acquire(self, tokens: int) -> float:
        """Wait until a request of `tokens` fits the last minute; the seconds waited. A request larger than the whole
        limit goes alone (an empty minute), else it would wait for ever."""
        if self.requests is None and self.tokens is None:
            return 0.0
        start = self.clock()
        with self._lock:
            while True:
                now = self.clock()
                while self._sent and now - self._sent[0][0] >= self.window:
                    self._sent.popleft()
                used = sum(n for _, n in self._sent)
                fits_requests = self.requests is None or len(self._sent) < self.requests
                fits_tokens = self.tokens is None or not self._sent or used + tokens <= self.tokens
                if fits_requests and fits_tokens:
                    self._sent.append((now, tokens))
                    return now - start
                # a second at most: the clock is checked again (a test's clock moves without a notify)
                self._lock.wait(timeout=min(1.0, max(0.01, self.window - (now - self._sent[0][0]))))
