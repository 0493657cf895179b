"""The request cache on the backend interface: every call a job makes (a batch of requests) computed once, ever.

:class:`CachedBackend` is a Backend in front of the model's real one. Each call is an entry of the store
(careval.request_cache) under the digest of what decides its numbers (:func:`model_facts` and the call's method and
arguments: the requests, the sampling settings and seed); a hit reads it, a miss computes it and writes it. The
real backend is built on the first miss only: a job whose calls are all cached loads no model. Every method of the
interface is an entry, the tokenizer's too (``format``, ``encode``, ``prompt_tokens``, ``max_length``), so that a
job that tokenizes before it asks (Relaxed Perplexity) needs no model either.

What of the model decides its numbers (the weights' content included) is careval.backends.model_facts; an
entry's JSON form and its checks are careval.backends.cache_entries.

An entry is checked against its call before it is used (:func:`misfit`: the count and type of values per request); one
that does not fit is a torn entry (named, removed, recomputed), never a NaN or a crash downstream. Each entry keeps
what computing it cost (its requests' tokens, the call's seconds and GPUs): a job's record says what its results
needed, read or computed, beside what it computed (careval.analysis.cost).

Byte identity. A job cuts its requests into the same batches with or without the cache (careval.batches), so the
engine sees the same calls in both; a result is what the entry holds (JSON: floats round-trip exactly), computed or
read. One more thing can differ: an engine may carry state from one call into the next (the hf backend continues a
scoring call from the keys/values of the generate before it, and scores Relaxed Perplexity's targets on its
sampler's cache). So a miss of such a continuing call (``READS_STATE``) after a hit of the call it continues
(``STATEFUL``) replays that call on the engine first: the engine then computes the miss exactly as in an uncached run
(a job resumed after a kill, a judge whose verdicts were cached but whose score distribution was not).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from careval.request_cache import RequestCache, digest

from .base import Backend, Continuation, Prefix, PrefixedTarget, Sampling, TopStep, Usage
from .cache_entries import misfit, plain, roundtrip
from .model_facts import model_facts
from .registry import registered, spec_capabilities

# Calls whose engine state a later call may continue from, and the calls that may (see the module docstring).
STATEFUL = ("generate", "sample_continuations")
READS_STATE = ("loglikelihood", "loglikelihood_rolling", "target_logprobs")


class CachedBackend(Backend):
    """The backend a job uses: its model's (a careval.models.spec.ModelSpec as the job runs it) real backend, built
    on the first call the cache cannot answer, behind the request cache in `directory` (None: no cache, every call
    computed; see the module docstring). As a context manager, it ends with the job log's line and, with `record`,
    the job's request counts for the cost table (:meth:`finish`)."""

    def __init__(
        self,
        spec: Any,
        directory: str | None,
        record: Path | None = None,
        load: Callable[[Any], Backend] | None = None,
    ) -> None:
        entry = registered(spec.backend)
        self.spec, self.store, self.record = spec, RequestCache(directory) if directory else None, record
        self.name, self.backend, self.capabilities = spec.name, spec.backend, spec_capabilities(spec)
        self.chat_template = bool(spec.chat_template)  # as the real backend has it (Backend.request_pair)
        self._load = load or entry.load
        self._inner: Backend | None = None
        self._facts: dict[str, Any] | None = None  # model_facts, on the first call (a folder's digest takes time)
        self._known: dict[str, Any] = {}  # the entries this job has read or written, by key
        self._unreplayed: Callable[[Backend], Any] | None = None  # a stateful call read, not run
        self.hits = self.computed = 0  # requests (prompts, pairs, texts, samplings, targets), not tokenizer calls
        self.computed_tokens = Usage(0, 0)
        # what this job's results needed, read or computed (each entry keeps its cost): tokens, the calls' seconds and
        # GPU-seconds, and the requests of entries written before entries kept their cost (their seconds unknown)
        self.needed = {"prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.0, "gpu_seconds": 0.0, "uncosted": 0}
        self.last_usage: list[Usage] = []
        self.cut_requests = self.cut_tokens = 0  # contexts longer than the model's window, left-truncated
        self.last_status: list[str] = []

    def __enter__(self) -> CachedBackend:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if kind is None:
            self.finish()
        self.close()

    # ------------------------------------------------------------------ the real backend, on demand
    def inner(self) -> Backend:
        if self._inner is None:
            start = time.perf_counter()
            self._inner = self._load(self.spec)
            if str(self.spec.weights).startswith("hf:"):
                self._facts = None  # the load may have fetched another commit of the hub model: resolved again
            # one line per load: the logs count how often a model was loaded (docs/slurm.md)
            print(
                f"loaded model {self.spec.name} ({self.spec.backend}, gpus={self.spec.gpus}, dtype={self.spec.dtype}) "
                f"in {time.perf_counter() - start:.1f}s",
                flush=True,
            )
        return self._inner

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    @property
    def gpus(self) -> int:
        return self._inner.gpus if self._inner is not None else self.spec.gpus

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()

    # ------------------------------------------------------------------ one call, one entry
    def _call(
        self,
        method: str,
        args: tuple,
        requests: int,
        encode: Callable[[Any], Any],
        decode: Callable[[Any], Any],
        compute: Callable[[Backend], Any] | None = None,
    ) -> Any:
        """One call: its entry (keyed by `method` and `args`) read, or `compute(engine)` (default: the engine's
        `method` on `args`) run and written; `requests`: how many LLM requests it holds (0: a tokenizer call)."""
        compute = compute or (lambda engine: getattr(engine, method)(*args))
        key = self._key(method, args)
        stored = None if key is None else self._known.get(key)
        if stored is None and key is not None and self.store is not None:
            stored = self.store.get(key)
            problem = None if stored is None else misfit(method, args, stored)
            if problem is not None:  # a torn entry: named, removed, computed again
                self.store.discard(key, problem)
                stored = None
        if stored is not None and key is not None:
            self._known[key] = stored
            if requests:
                self.hits += requests
                self._unreplayed = compute if method in STATEFUL else self._unreplayed
                self._count_needed(stored, requests)
            self.last_usage = [Usage(*u) for u in stored["usage"]]
            self._count_cut(self.last_usage)
            self.last_status = []
            return decode(stored["value"])
        inner = self.inner()
        if method in READS_STATE and self._unreplayed is not None:
            replay, self._unreplayed = self._unreplayed, None
            replay(inner)
        inner.last_usage = []  # a runtime that counts no tokens leaves it so, not at the last call's counts
        inner.last_cut = []  # pyright: ignore[reportAttributeAccessIssue]  (a tokenizing backend's: TokenizerRequests)
        inner.last_status, inner.last_reused, inner.last_paid = [], 0, None
        start = time.perf_counter()
        result = compute(inner)
        seconds = time.perf_counter() - start
        usage = list(inner.last_usage) if requests else []
        cut = list(getattr(inner, "last_cut", None) or [])
        if usage and len(cut) == len(usage):  # the tokens cut from each context that was longer than the window
            usage = [(u[0], u[1], c) for u, c in zip(usage, cut)]
        # a served model keeps each request as it arrives: those it read back were not computed, nor paid for again
        reused = min(inner.last_reused, requests) if requests else 0
        paid = usage if inner.last_paid is None else list(inner.last_paid)
        entry = roundtrip({"value": encode(result), "usage": [list(u) for u in usage]})
        if requests:
            entry["cost"] = {"seconds": seconds, "gpus": int(inner.gpus or 0)}
            self.hits += reused
            self.computed += requests - reused
            self._unreplayed = None if method in STATEFUL else self._unreplayed
            self.computed_tokens = Usage(
                self.computed_tokens.prompt + sum(u[0] for u in paid),
                self.computed_tokens.generated + sum(u[1] for u in paid),
            )
            self._count_needed(entry, requests)
        self.last_status = list(inner.last_status) if requests else []
        if self.last_status:  # a request failed (counted per sample): the call is asked again next time, not kept
            self.last_usage = [Usage(*u) for u in entry["usage"]]
            self._count_cut(self.last_usage)
            return decode(entry["value"])
        if self.store is not None:
            key = key or self._key(method, args)  # a hub model's commit, resolved after its load
            if key is not None:
                self.store.keep(key, entry)  # a read-only or full cache disk: one warning, the job goes on
                self._known[key] = entry
        self.last_usage = [Usage(*u) for u in entry["usage"]]
        self._count_cut(self.last_usage)
        return decode(entry["value"])  # as a hit reads it back

    def _count_cut(self, usage: list[Usage]) -> None:
        cut = [u.cut for u in usage if u.cut]
        self.cut_requests += len(cut)
        self.cut_tokens += sum(cut)

    def _key(self, method: str, args: tuple) -> str | None:
        """The entry's key: the model's facts and the call; None where the model's content is not known yet (a hub
        model no job has fetched: its commit is resolved after the load) or there is no cache."""
        if self.store is None:
            return None
        if self._facts is None:
            self._facts = model_facts(self.spec, self.store)
        if str(self.spec.weights).startswith("hf:") and self._facts.get("revision") is None:
            if self._inner is None:
                return None
            self._facts = model_facts(self.spec, self.store)
            if self._facts.get("revision") is None:
                return None  # a hub model outside the hub cache (a mirror, a path): not cached, never stale
        return digest({"model": self._facts, "call": method, "args": plain(args)})

    def _count_needed(self, entry: dict, requests: int) -> None:
        """Add what computing `entry` cost to what this job's results needed (the module docstring)."""
        usage = entry["usage"]
        self.needed["prompt_tokens"] += sum(u[0] for u in usage)
        self.needed["generated_tokens"] += sum(u[1] for u in usage)
        cost = entry.get("cost")
        if cost is None:
            self.needed["uncosted"] += requests
            return
        self.needed["seconds"] += cost["seconds"]
        self.needed["gpu_seconds"] += cost["seconds"] * cost["gpus"]

    # ------------------------------------------------------------------ the interface
    @property
    def max_length(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self._call("max_length", (), 0, int, int, lambda engine: engine.max_length)

    def format(self, prompt: str, instruction: str | None = None) -> str:
        # the instruction is an argument, so part of the key; a call without one keeps the key it always had
        return self._call("format", (prompt, instruction) if instruction else (prompt,), 0, str, str)

    def encode(self, text: str) -> list[int]:
        return self._call("encode", (text,), 0, list, list)

    def prompt_tokens(self, prompt: str, room: int, instruction: str | None = None) -> tuple[list[int], int]:
        args = (prompt, room, instruction) if instruction else (prompt, room)  # as format's key
        return self._call("prompt_tokens", args, 0, lambda r: [list(r[0]), r[1]], lambda v: (v[0], v[1]))

    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        # as format's: the instruction is part of the key, and a call without one keeps the key it always had
        args = (list(prompts), sampling, instruction) if instruction else (list(prompts), sampling)
        return self._call("generate", args, len(prompts), list, list)

    def loglikelihood(self, pairs: list[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        return self._call("loglikelihood", ([tuple(p) for p in pairs],), len(pairs), list, list)

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        if not texts:
            return []
        return self._call("loglikelihood_rolling", (list(texts),), len(texts), list, list)

    def generate_top_logprobs(
        self, prompts: list[str], sampling: Sampling, top: int, instruction: str | None = None
    ) -> list[tuple[str, list[TopStep]]]:
        if not prompts:
            return []
        args = (list(prompts), sampling, top, instruction) if instruction else (list(prompts), sampling, top)
        return self._call(
            "generate_top_logprobs",
            args,
            len(prompts),
            lambda result: [[text, [[step.token, step.top] for step in steps]] for text, steps in result],
            lambda value: [(text, [TopStep(token, dict(top)) for token, top in steps]) for text, steps in value],
            lambda engine: engine.generate_top_logprobs(prompts, sampling, top, instruction),
        )

    def greedy_flags(self, pairs: list[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        return self._call("greedy_flags", ([tuple(p) for p in pairs],), len(pairs), list, list)

    def sample_continuations(
        self, prompt_ids: Sequence[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[Continuation]:
        return self._call(
            "sample_continuations",
            (list(prompt_ids), n, max_tokens, top_p, seed),
            1,
            lambda result: [[list(c.token_ids), c.logprob] for c in result],
            lambda value: [Continuation(tuple(ids), logprob) for ids, logprob in value],
            lambda engine: engine.sample_continuations(prompt_ids, n=n, max_tokens=max_tokens, top_p=top_p, seed=seed),
        )

    def target_logprobs(
        self,
        prompt_ids: Sequence[int],
        continuations: Sequence[Sequence[int]],
        lengths: Sequence[int],
        targets: Sequence[Sequence[int]],
    ) -> list[dict[Prefix, PrefixedTarget]]:
        args = (list(prompt_ids), [list(c) for c in continuations], list(lengths), [list(t) for t in targets])
        return self._call(
            "target_logprobs",
            args,
            len(targets),
            lambda result: [[[list(p), v.prefix, v.target] for p, v in by_prefix.items()] for by_prefix in result],
            lambda value: [{tuple(p): PrefixedTarget(a, b) for p, a, b in rows} for rows in value],
        )

    def truncation_warning(self) -> str | None:
        """The job's one line where some context was longer than the model's window (None where none was)."""
        if not self.cut_requests:
            return None
        return (
            f"careval warning: {self.cut_requests} requests of {self.spec.name} had a context longer than its window: "
            f"left-truncated as lm-eval does (the end kept), {self.cut_tokens} tokens cut; their rows' cut_tokens say "
            "how many, their tokens count those read"
        )

    def report(self) -> str:
        """The job log's line: `cache: H requests from the cache, C computed`."""
        if self.store is None:
            return f"cache: off (resources.cache: false), {self.computed} requests computed"
        return f"cache: {self.hits} requests from the cache, {self.computed} computed"

    def finish(self) -> None:
        """The job's end: its line in the log and, where asked, its request counts and the tokens it computed (what
        the cost table counts as spent: careval.analysis.cost)."""
        print(self.report(), flush=True)
        warning = self.truncation_warning()
        if warning is not None:
            print(warning, flush=True)
        if self.record is not None:
            counts = {
                "requests": self.hits + self.computed,
                "cached": self.hits,
                "computed": self.computed,
                "prompt_tokens": self.computed_tokens.prompt,
                "generated_tokens": self.computed_tokens.generated,
                "cut_requests": self.cut_requests,
                "cut_tokens": self.cut_tokens,
                **{f"needed_{key}": value for key, value in self.needed.items()},
            }
            self.record.parent.mkdir(parents=True, exist_ok=True)
            scratch = self.record.with_name(f".{self.record.name}.{os.getpid()}.tmp")
            scratch.write_text(json.dumps(counts, sort_keys=True) + "\n")
            os.replace(scratch, self.record)


def job_backend(spec: Any, record: Path | None = None) -> CachedBackend:
    """The backend of a job's model spec: behind the request cache where the run has one (ModelSpec.cache_dir)."""
    return CachedBackend(spec, spec.cache_dir, record)
