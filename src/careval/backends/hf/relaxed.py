"""The hf backend's token-level methods, which Relaxed Perplexity is written over: seeded top-p sampling
(``sample_continuations``) and the target log-probabilities after every prefix of the kept continuations
(``target_logprobs``), on the sampler's own key/value cache.

``target_logprobs`` returns, for every distinct prefix ``p = c[:n]`` of the kept continuations,
``log P(p | q)`` and ``log P(t | q + p)`` (natural logs, the model's unmodified distribution), which
careval.metrics.relaxed_perplexity combines into the metric. The kept continuations' keys/values come from the
sampling call just before (``sample_continuations`` keeps them until the next call), else from one cached pass
over ``q + c`` for all of them. Then the target copies of every stride point of every continuation run in one
batched forward over that cache. Each copy ``[c[n-1], t[0], ..., t[T-2]]`` sits at positions ``|q| + n - 1 ...``
and a 4D additive mask lets it see only ``q + c[:n-1]`` of the cache and its own earlier tokens; re-feeding
``c[n-1]`` (``q[-1]`` for n = 0) yields the distribution of ``t[0]`` without keeping the logits of the prefix
pass. Copies are split over several passes only to bound the logits memory (``LOGITS_BUDGET``); the cache is cut
back to the prefix after each pass. The shared-prefix scorer (scoring.py) would run ``q`` again for every prefix:
tests/metrics/test_relaxed_perplexity_speed.py measures both.

Models with sliding-window layers (Gemma 3) get a per-layer-type mask dict with the window
applied, and a plain (non-sliding) cache so that no layer drops keys the mask refers to.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from ..base import Continuation, PrefixedTarget
from ..tokenization import request_seeds
from .generation import _SeededSampler

Prefix = tuple[int, ...]

# Most logits (rows x positions x vocab floats) one fast pass may materialise: 2**25 floats = 128 MiB.
LOGITS_BUDGET = 2**25


def _log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """In float32 at least (bf16 logits lose digits), float64 kept for exactness tests."""
    return torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)


def _cache_kwarg(model: Any) -> str:
    """transformers 5 renamed ``past_key_values`` to ``cache`` (the old name is deprecated)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _new_cache() -> Any:
    # No config on purpose: plain layers keep every key, so a custom mask can address all of them.
    return DynamicCache()


def _forward(model: Any, cache: Any, **kwargs: Any) -> torch.Tensor:
    return model(**{_cache_kwarg(model): cache}, use_cache=True, **kwargs).logits


def _sliding_window(model: Any) -> int | None:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    layer_types = getattr(config, "layer_types", None) or ()
    window = getattr(config, "sliding_window", None)
    return int(window) if window and "sliding_attention" in layer_types else None


def _attention_mask(model: Any, visible: torch.Tensor, query_pos: torch.Tensor, key_pos: torch.Tensor) -> Any:
    """Additive 4D mask(s) from a boolean ``visible[row, query, key]``; a window mask too where the model has one."""
    dtype = model.dtype if model.dtype.is_floating_point else torch.float32

    def additive(keep: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(keep.shape, dtype=dtype)
        mask.masked_fill_(~keep, torch.finfo(dtype).min)
        return mask[:, None].to(model.device)

    full = additive(visible)
    window = _sliding_window(model)
    if window is None:
        return full
    near = (query_pos[:, :, None] - key_pos[:, None, :]) < window
    return {"full_attention": full, "sliding_attention": additive(visible & near)}


# ---------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------
@dataclass
class Sampled:
    """Sampled continuations, their per-token log-probabilities, and the KV cache of q + c[:-1] (rows = samples)."""

    continuations: list[Prefix]
    token_logprobs: list[list[float]]
    cache: Any


@torch.inference_mode()
def draw_continuations(
    model: Any,
    question_ids: Sequence[int],
    *,
    s: int,
    max_tokens: int,
    top_p: float,
    seed: int,
    suppress_ids: Sequence[int] = (),
) -> Sampled:
    """``s`` continuations of exactly ``max_tokens`` tokens, drawn with nucleus sampling (temperature 1).

    ``suppress_ids`` (the end-of-sequence ids) are never drawn -- vLLM's ``min_tokens`` -- so no
    continuation ends early. Recorded log-probabilities are the model's unmodified ones
    (before top-p and suppression): P(c | q) as the paper's estimator uses it. Each row draws
    from its own generator, seeded by (seed, question ids, row), as the hf backend does.
    """
    if s < 1 or max_tokens < 1:
        raise ValueError(f"sample_continuations needs s >= 1 and max_tokens >= 1, got s={s}, max_tokens={max_tokens}")
    q = list(question_ids)
    cache = _new_cache()
    logits = _forward(model, cache, input_ids=torch.tensor([q], device=model.device), logits_to_keep=1)[:, -1]
    cache.batch_repeat_interleave(s)
    logits = logits.expand(s, -1)
    key = " ".join(map(str, q))
    sampler = _SeededSampler(request_seeds(seed, [key] * s), temperature=1.0, top_p=top_p)
    suppress = torch.tensor(sorted({int(i) for i in suppress_ids}), dtype=torch.long)
    tokens: list[list[int]] = [[] for _ in range(s)]
    logps: list[list[float]] = [[] for _ in range(s)]
    for step in range(max_tokens):
        logp = _log_softmax(logits)
        drawn_from = logp.clone()
        if len(suppress):
            drawn_from[:, suppress.to(drawn_from.device)] = -math.inf
        chosen = sampler(None, drawn_from).argmax(dim=-1)  # pyright: ignore[reportArgumentType]  (it reads no input_ids)
        picked = logp.gather(-1, chosen[:, None])[:, 0]
        for row in range(s):
            tokens[row].append(int(chosen[row]))
            logps[row].append(float(picked[row]))
        if step < max_tokens - 1:  # the last token is never fed: the cache covers q + c[:-1]
            logits = _forward(model, cache, input_ids=chosen[:, None])[:, -1]
    return Sampled([tuple(t) for t in tokens], logps, cache)


# ---------------------------------------------------------------------------------------
# fast scorer
# ---------------------------------------------------------------------------------------
@dataclass
class PrefixCache:
    """KV cache of ``q + c_i[:-1]`` for each kept continuation c_i (row i), right-padded to one length."""

    cache: Any
    question_ids: list[int]
    continuations: list[Prefix]
    past_len: int
    token_logprobs: list[list[float]] | None  # log P(c_i[k] | q + c_i[:k]), when asked for
    tokens_run: int


@torch.inference_mode()
def build_prefix_cache(
    model: Any, question_ids: Sequence[int], continuations: Sequence[Prefix], *, token_logprobs: bool
) -> PrefixCache:
    """Run q once and every continuation (but its last token) in one batched pass over q's cache."""
    q = list(question_ids)
    conts = [tuple(c) for c in continuations]
    rows = len(conts)
    width = max((len(c) - 1 for c in conts), default=0)
    width = max(width, 0)
    cache = _new_cache()
    first = _forward(model, cache, input_ids=torch.tensor([q], device=model.device), logits_to_keep=1)[0, -1]
    cache.batch_repeat_interleave(rows)
    tokens_run = len(q)
    logps: list[list[float]] | None = None
    block_logits: Any = None
    if width > 0:
        block = torch.zeros((rows, width), dtype=torch.long)
        for row, c in enumerate(conts):
            if len(c) > 1:
                block[row, : len(c) - 1] = torch.tensor(c[:-1], dtype=torch.long)
        # Padding sits after each row's real tokens, so plain causal attention never lets a real
        # token see it; no mask is needed.
        block_logits = _forward(
            model, cache, input_ids=block.to(model.device), logits_to_keep=0 if token_logprobs else 1
        )
        tokens_run += sum(max(len(c) - 1, 0) for c in conts)
    if token_logprobs:
        first_logp = _log_softmax(first)
        logps = []
        for row, c in enumerate(conts):
            values = [float(first_logp[c[0]])] if c else []
            if len(c) > 1:
                logp = _log_softmax(block_logits[row, : len(c) - 1])
                wanted = torch.tensor(c[1:], device=logp.device)
                values += logp.gather(-1, wanted[:, None])[:, 0].tolist()
            logps.append(values)
    return PrefixCache(cache, q, conts, len(q) + width, logps, tokens_run)


def prefix_cache_from_sample(sampled: Sampled, question_ids: Sequence[int], keep: Sequence[int]) -> PrefixCache:
    """The sampler's own cache, cut down to the kept rows: no second pass over q + c."""
    sampled.cache.batch_select_indices(torch.tensor(list(keep), dtype=torch.long))
    conts = [sampled.continuations[i] for i in keep]
    width = max(len(c) for c in conts) - 1
    return PrefixCache(
        sampled.cache,
        list(question_ids),
        conts,
        len(question_ids) + width,
        [sampled.token_logprobs[i] for i in keep],
        0,
    )


def owned_copies(continuations: Sequence[Prefix], steps: Sequence[int]) -> list[list[int]]:
    """Per row, the stride points whose prefix no earlier row has: each distinct prefix is scored once."""
    seen: set[Prefix] = set()
    owned: list[list[int]] = []
    for c in continuations:
        mine = []
        for n in steps:
            if n <= len(c) and c[:n] not in seen:
                seen.add(c[:n])
                mine.append(n)
        owned.append(mine)
    return owned


@torch.inference_mode()
def score_fast(
    model: Any, prefix: PrefixCache, target_ids: Sequence[int], steps: Sequence[int]
) -> tuple[dict[Prefix, float], int]:
    """log P(t | q + c[:n]) for every distinct prefix at the stride points, over the prefix cache."""
    t = list(target_ids)
    T = len(t)
    Q = len(prefix.question_ids)
    rows = len(prefix.continuations)
    owned = owned_copies(prefix.continuations, steps)
    vocab = int(
        model.config.get_text_config().vocab_size
        if hasattr(model.config, "get_text_config")
        else model.config.vocab_size
    )
    per_pass = max(1, LOGITS_BUDGET // max(1, rows * T * vocab))
    target_ll: dict[Prefix, float] = {}
    tokens_run = 0
    most = max((len(o) for o in owned), default=0)
    for start in range(0, most, per_pass):
        chunk = [o[start : start + per_pass] for o in owned]
        width = max(len(o) for o in chunk) * T
        if width == 0:
            continue
        ids = torch.zeros((rows, width), dtype=torch.long)
        query_pos = torch.zeros((rows, width), dtype=torch.long)
        key_pos = torch.zeros((rows, prefix.past_len + width), dtype=torch.long)
        visible = torch.zeros((rows, width, prefix.past_len + width), dtype=torch.bool)
        key_pos[:, : prefix.past_len] = torch.arange(prefix.past_len)
        for row, (c, copies) in enumerate(zip(prefix.continuations, chunk)):
            for k, n in enumerate(copies):
                lo = k * T
                prev = c[n - 1] if n > 0 else prefix.question_ids[-1]
                ids[row, lo : lo + T] = torch.tensor([prev] + t[:-1], dtype=torch.long)
                positions = torch.arange(Q + n - 1, Q + n - 1 + T)
                query_pos[row, lo : lo + T] = positions
                key_pos[row, prefix.past_len + lo : prefix.past_len + lo + T] = positions
                # q + c[:n-1] from the cache (prev is re-fed, so its cached copy stays hidden) ...
                visible[row, lo : lo + T, : Q + n - 1] = True
                # ... and the copy's own tokens, causally
                visible[row, lo : lo + T, prefix.past_len + lo : prefix.past_len + lo + T] = torch.tril(
                    torch.ones((T, T), dtype=torch.bool)
                )
            used = len(copies) * T
            for j in range(used, width):  # padding sees only itself (a fully masked row would be NaN)
                visible[row, j, prefix.past_len + j] = True
                query_pos[row, j] = key_pos[row, prefix.past_len + j] = Q
        mask = _attention_mask(model, visible, query_pos, key_pos)
        logits = _forward(
            model,
            prefix.cache,
            input_ids=ids.to(model.device),
            attention_mask=mask,
            position_ids=query_pos.to(model.device),
        )
        prefix.cache.crop(-width)  # back to q + c[:-1] for the next pass / target
        logp = _log_softmax(logits)
        wanted = torch.tensor(t, device=logp.device)
        for row, (c, copies) in enumerate(zip(prefix.continuations, chunk)):
            for k, n in enumerate(copies):
                block = logp[row, k * T : (k + 1) * T]
                target_ll[c[:n]] = float(block.gather(-1, wanted[:, None]).sum())
        tokens_run += sum(len(o) for o in chunk) * T
    return target_ll, tokens_run


def eos_ids(model: Any) -> list[int]:
    """Every end-of-sequence id of the model (its generation config's and its config's): never sampled."""
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config):
        eos = getattr(source, "eos_token_id", None)
        if eos is not None:
            ids.update([int(eos)] if isinstance(eos, int) else [int(e) for e in eos])
    return sorted(ids)


class TokenLevelMixin:
    """HFBackend's sample_continuations and target_logprobs (careval.backends.base.Backend)."""

    model: Any
    _sampled: tuple[Prefix, Sampled] | None  # the last sampling call's prompt and its continuations' cache

    def sample_continuations(
        self, prompt_ids: Sequence[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[Continuation]:
        sampled = draw_continuations(
            self.model, prompt_ids, s=n, max_tokens=max_tokens, top_p=top_p, seed=seed, suppress_ids=eos_ids(self.model)
        )
        self._sampled = (tuple(prompt_ids), sampled)
        return [Continuation(c, sum(lp)) for c, lp in zip(sampled.continuations, sampled.token_logprobs)]

    def target_logprobs(
        self,
        prompt_ids: Sequence[int],
        continuations: Sequence[Sequence[int]],
        lengths: Sequence[int],
        targets: Sequence[Sequence[int]],
    ) -> list[dict[Prefix, PrefixedTarget]]:
        kept = [tuple(int(x) for x in c) for c in continuations]
        prefix = self._prefix_cache(prompt_ids, kept)
        assert prefix.token_logprobs is not None  # kept by the sampler, or asked for below
        prefix_ll: dict[Prefix, float] = {}
        for c, logprobs in zip(kept, prefix.token_logprobs):
            for n in lengths:
                if n <= len(c):
                    prefix_ll.setdefault(c[:n], float(sum(logprobs[:n])))
        results = []
        for target in targets:
            target_ll, _ = score_fast(self.model, prefix, target, lengths)
            results.append({p: PrefixedTarget(prefix_ll[p], value) for p, value in target_ll.items()})
        return results

    def _prefix_cache(self, prompt_ids: Sequence[int], kept: list[Prefix]) -> PrefixCache:
        """The keys/values of q + c[:-1] per kept continuation: the last sampling call's, where it sampled them
        from this prompt (used once: scoring cuts its rows), else one pass over them."""
        memo, self._sampled = self._sampled, None
        if memo is not None and memo[0] == tuple(prompt_ids) and all(c in memo[1].continuations for c in kept):
            sampled = memo[1]
            return prefix_cache_from_sample(sampled, prompt_ids, [sampled.continuations.index(c) for c in kept])
        return build_prefix_cache(self.model, prompt_ids, kept, token_logprobs=True)
