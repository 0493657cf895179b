"""A served model's budget (its entry's `max_cost`): what it spent, kept in a ledger that every job shares.

The ledger is one file per model (``<resources.cache_dir>/spent/<name>.jsonl``, beside the request cache whose entries
are what was bought), appended to under an exclusive lock (``flock``: one machine, or a cluster filesystem with
POSIX locks), one JSON line per event:

* ``{"hold": id, "cost": c, "until": t}``: a request about to be sent may cost up to c (its prompt's tokens and all it
  may generate, at the entry's price); the hold lapses at t (the longest the request's tries can take), so a job
  killed with requests in flight does not hold the budget for ever;
* ``{"paid": id, "cost": c}``: what it cost (the reply's usage; 0 for a request no reply came back for).

Spent = every ``paid`` + every hold not yet paid and not lapsed. A request is held before it is sent, and only where
spent + its most stays within the budget; else :class:`BudgetExceeded` stops the job with one line naming the model,
what it spent and the budget. Requests already answered are in the request cache: raising ``max_cost`` and rerunning
goes on from there, paying for none of them again.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path


class BudgetExceeded(RuntimeError):
    """The next request could cross the model's max_cost (one line)."""

    one_line = True


class Ledger:
    """The spending of model `who` (`models.<name>`) against `budget`, in the file `path` (the module docstring);
    `hold_s`: how long a hold lasts (a request's longest time, its retries included)."""

    def __init__(
        self, path: Path | str, budget: float, who: str, hold_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.path, self.budget, self.who, self.hold_s, self.clock = Path(path), float(budget), who, hold_s, clock
        self._lock = threading.Lock()
        self._offset = 0
        self._paid = 0.0
        self._holds: dict[str, tuple[float, float]] = {}  # id -> (cost, until)
        self.stopped = False

    def _read(self, handle) -> None:
        """The lines appended since the last read (the caller holds the file's lock)."""
        handle.seek(self._offset)
        data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line cut by a crash mid-write is left for its writer's next one
        self._offset += len(complete)
        for line in complete.splitlines():
            try:
                event = json.loads(line)
                if "hold" in event:
                    self._holds[event["hold"]] = (float(event["cost"]), float(event["until"]))
                elif "paid" in event:
                    self._holds.pop(event["paid"], None)
                    self._paid += float(event["cost"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn line: its request's hold lapses in time

    def _spent(self) -> float:
        now = self.clock()
        return self._paid + sum(cost for cost, until in self._holds.values() if until > now)

    def _locked(self, append: Callable[[float], dict | None]) -> dict | None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self._read(handle)
                event = append(self._spent())
                if event is not None:
                    handle.seek(0, os.SEEK_END)
                    handle.write(json.dumps(event).encode() + b"\n")
                    handle.flush()
                    self._read(handle)
                return event
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def spent(self) -> float:
        """What the model has spent, the holds of requests in flight included."""
        self._locked(lambda spent: None)
        return self._spent()

    def reserve(self, most: float) -> str:
        """Hold `most` for a request about to be sent; BudgetExceeded where it could cross the budget."""
        hold = secrets.token_hex(8)

        def append(spent: float) -> dict:
            if spent + most > self.budget:
                self.stopped = True
                raise BudgetExceeded(
                    f"{self.who}.max_cost: stopped before the budget is crossed: spent {spent:.4f} of {self.budget:g} "
                    f"(the next request may cost up to {most:.4f}); every answered request is in the request cache: "
                    "raise max_cost and rerun to go on"
                )
            return {"hold": hold, "cost": most, "until": self.clock() + self.hold_s}

        self._locked(append)
        return hold

    def settle(self, hold: str, cost: float) -> None:
        """What the held request cost (0 where no reply came back)."""
        self._locked(lambda spent: {"paid": hold, "cost": cost})

    def describe(self) -> str:
        return f"spent {self.spent():.4f} of max_cost {self.budget:g}"
