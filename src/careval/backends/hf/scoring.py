"""The hf backend's scoring: log-likelihoods of (context, continuation) token ids, lm-eval's HFLM rules.

Scoring follows lm-evaluation-harness's HFLM (see tokenization.py for the token rules):
right-padded batches sorted by length (longest first), ``log_softmax`` in float32 (float64
for a float64 model), results in input order. Padding never changes a score: causal
attention does not look right, and the attention mask hides the padding anyway.

Shared prefix (``shared_prefix=True``, the default): requests with the same context ids
(MCQA options, classification labels, prescriptions; tokenization.shared_prefix_groups)
run the context once, up to ``batch_size`` contexts per forward (on CPU only contexts of about
the same length share a forward). The first token of every continuation is scored from its
context's last logits. The rest of the continuations:

* packed (models whose every layer attends to every position, with sdpa or eager attention): in
  the same forward, after their context in its row, each attending to the context and to itself
  only (a 4D mask), its positions continuing the context's. One forward per batch of questions,
  and no copy of the context's keys/values per continuation: on CPU a forward over a few tokens
  costs about one read of the weights, so a second forward per question was most of the cost
  (cloze MedQA/MedMCQA: 3.65x lm-eval's HFLM, against 2.9x in two forwards;
  tests/backends/test_shared_prefix_speed.py).
* in two forwards (sliding-window models such as Gemma 3, whose layers see different windows, or a
  batch whose mask would pass ``_PACKED_MASK_ENTRIES``): the contexts left-padded with ``use_cache``,
  then the continuations in right-padded batches of ``batch_size`` on top of the contexts'
  keys/values (the DynamicCache rows selected once per continuation, positions continuing each
  context).

One-token continuations (the letters protocol) need nothing after the context: one forward per
``batch_size`` questions. The scores equal the plain path's up to float rounding
(tests/backends/test_shared_prefix.py, both forms); ``shared_prefix=False`` keeps the plain path,
which lm-eval's HFLM also takes for multi-token continuations.

After a ``generate`` (generation.py), a shared-prefix scoring group whose context starts with one of its rows'
remembered keys/values runs only the rest of its context (``_score_remembered``). The judge asks for the
score tokens right after its own prompt and feedback (judge_distribution.py), so its second pass costs a
few tokens, not a second prefill; the same log-likelihoods up to float rounding
(tests/backends/test_prefix_memo.py).

lm-eval's is_greedy (``greedy_flags``) comes from the same passes: at each scored position, whether the argmax of
the log-probabilities is the continuation's token, as HFLM computes it. So it costs what the log-likelihoods cost
(160 MedQA/MedMCQA options on SmolLM2, one thread: 9.8 s, against 41 s as one whole request per forward); a flag
can differ from the unshared forward's only where two tokens tie to float rounding (tests/backends/test_greedy.py:
lm-eval's flags on every path).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import DynamicCache

from ..tokenization import encode_pair, scoring_window, shared_prefix_groups

# Shared-prefix contexts on CPU: the most left padding a batch of contexts may carry, as a
# share of its real tokens (HFBackend._context_batches).
_CPU_PADDING = 0.1
# The largest 4D attention mask a packed scoring forward may build (batch x width x width entries); a wider
# batch of contexts takes the two-forward shared path instead (HFBackend._score_packed).
_PACKED_MASK_ENTRIES = 64 << 20


class ScoringMixin:
    """HFBackend's log-likelihood methods (backend.py holds the model, tokenizer and settings they read)."""

    name: str
    model: Any
    tokenizer: Any
    device: torch.device
    batch_size: int
    max_length: int
    add_bos: bool | None
    pad_id: int
    prefix_id: int
    shared_prefix: bool
    packed: bool
    memo_hits: int
    _memo: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]]
    _has_logits_to_keep: bool
    _cache_arg: str

    def greedy_flags(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Backend.greedy_flags as lm-eval's HFLM computes is_greedy (1.0 where the argmax of the log-probabilities
        at every continuation position is the continuation's token), from the log-likelihoods' own passes."""
        requests = [encode_pair(self.tokenizer, c, x, add_bos=self.add_bos) for c, x in pairs]
        _, flags = self._scored(requests, greedy=True)
        assert flags is not None  # _scored gives the flags whenever asked
        return flags

    def score_tokens(self, requests: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        """Log-likelihood of each continuation token list given its context token list."""
        return self._scored(requests, greedy=False)[0]

    @torch.inference_mode()
    def _scored(
        self, requests: Sequence[tuple[Sequence[int], Sequence[int]]], greedy: bool
    ) -> tuple[list[float], list[float] | None]:
        """Each request's log-likelihood and, with `greedy`, its greedy flag (1.0 or 0.0). The flags cost an argmax
        over the vocabulary at every scored position (rolling perplexity on Gemma's 262k: ~10%), so only when asked."""
        items = [scoring_window(c, x, self.max_length) for c, x in requests]  # raises on bad input first
        groups, rest = (
            shared_prefix_groups(requests, self.max_length) if self.shared_prefix else ([], range(len(items)))
        )
        results = [math.nan] * len(items)
        flags = [math.nan] * len(items) if greedy else None
        bar = tqdm(total=len(items), desc=f"{self.name}: score", unit="req", dynamic_ncols=True)
        for members in self._context_batches([len(requests[g[0]][0]) for g in groups], groups):
            batch = [(list(requests[g[0]][0]), [(i, list(requests[i][1])) for i in g]) for g in members]
            if self.shared_prefix and self._memo:
                batch = self._score_remembered(batch, results, flags, bar)
            if not batch:
                continue
            if self.shared_prefix and (
                self._score_packed(batch, results, flags) or self._score_shared(batch, results, flags)
            ):
                bar.update(sum(len(conts) for _, conts in batch))
            else:  # the model keeps no DynamicCache to continue from: plain path from now on
                self.shared_prefix = False
                rest = [*rest, *(i for _, conts in batch for i, _ in conts)]
        self._score_plain(items, sorted(rest), results, flags, bar)
        bar.close()
        return results, flags

    def _context_batches(self, lengths: list[int], groups: list[list[int]]) -> list[list[list[int]]]:
        """Groups in batches of at most ``batch_size`` contexts, longest first (as the plain path).

        On CPU a batch also ends where its left padding would pass ``_CPU_PADDING`` of its real
        tokens: a CPU forward costs about its padded tokens, and one context of ~100 tokens
        already keeps the cores busy, so padding is pure loss there (on a GPU it is nearly free).
        """
        limit = _CPU_PADDING if self.device.type == "cpu" else math.inf
        batches: list[list[list[int]]] = []
        width = real = 0
        for g in sorted(range(len(groups)), key=lambda g: (-lengths[g], groups[g][0])):
            n = lengths[g]
            grown = batches and len(batches[-1]) < self.batch_size
            if grown and (len(batches[-1]) + 1) * width - (real + n) <= limit * (real + n):
                batches[-1].append(groups[g])
                real += n
            else:  # sorted longest first: the first context of a batch sets its width
                batches.append([groups[g]])
                width = real = n
        return batches

    def _logprobs(self, logits: torch.Tensor) -> torch.Tensor:
        # float32 at least (lm-eval), float64 kept for a float64 model
        return torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)

    def _target_scores(
        self, logits: torch.Tensor, targets: Sequence[int], greedy: bool
    ) -> tuple[torch.Tensor, bool | None]:
        """The log-probability of ``targets[k]`` under ``logits[k]``, for each k, and with `greedy` whether every
        ``targets[k]`` is the argmax of its row (lm-eval's is_greedy; the first of tied maxima, as torch.argmax)."""
        target = torch.tensor(list(targets), dtype=torch.long, device=logits.device)
        logprobs = self._logprobs(logits)
        scores = logprobs.gather(-1, target[:, None])[:, 0]
        return scores, bool((logprobs.argmax(-1) == target).all()) if greedy else None

    def _score_packed(
        self,
        batch: list[tuple[list[int], list[tuple[int, list[int]]]]],
        results: list[float],
        greedy: list[float] | None,
    ) -> bool:
        """Score groups of continuations, each sharing its context, in one forward: a row holds its context and
        then every continuation but its last token, each continuation attending to the context and to itself
        only (a 4D mask), its positions continuing the context's. The same attention as the context's forward
        followed by one per continuation on its cache, without copying the cache per continuation or running the
        weights once more for a few tokens. False, with nothing scored, where the model cannot take the mask
        (``packed``) or the mask would be too large; _score_shared then scores the batch."""
        if not self.packed:
            return False
        rows = []  # (context length, tokens, positions, [(request, start, continuation)])
        for ctx, conts in batch:
            tokens, positions, segments = list(ctx), list(range(len(ctx))), []
            for i, x in conts:
                segments.append((i, len(tokens), x))
                tokens += x[:-1]
                positions += range(len(ctx), len(ctx) + len(x) - 1)
            rows.append((len(ctx), tokens, positions, segments))
        width = max(len(tokens) for _, tokens, _, _ in rows)
        if len(rows) * width * width > _PACKED_MASK_ENTRIES:
            return False
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        position_ids = torch.zeros((len(rows), width), dtype=torch.long)
        allowed = torch.zeros((len(rows), width, width), dtype=torch.bool)
        causal = torch.ones((width, width), dtype=torch.bool).tril()
        for row, (n_ctx, tokens, positions, segments) in enumerate(rows):  # right padding
            input_ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            position_ids[row, : len(tokens)] = torch.tensor(positions, dtype=torch.long)
            allowed[row, :n_ctx, :n_ctx] = causal[:n_ctx, :n_ctx]
            for _, start, x in segments:
                end = start + len(x) - 1
                allowed[row, start:end, :n_ctx] = True
                allowed[row, start:end, start:end] = causal[: end - start, : end - start]
            allowed[row, len(tokens) :, 0] = True  # padding queries see something: no row of the softmax all masked
        dtype = self.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill_(~allowed, torch.finfo(dtype).min)[:, None]
        # logits from the earliest context end on (each context's last position scores the first tokens)
        first = min(n_ctx for n_ctx, _, _, _ in rows) - 1
        kwargs: dict[str, Any] = {"logits_to_keep": width - first} if self._has_logits_to_keep else {}
        offset = first if kwargs else 0
        logits = self.model(
            input_ids=input_ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=position_ids.to(self.device),
            use_cache=False,
            **kwargs,
        ).logits
        for row, (n_ctx, _, _, segments) in enumerate(rows):
            firsts = self._logprobs(logits[row, n_ctx - 1 - offset])
            best = int(firsts.argmax()) if greedy is not None else None  # once per context, for all its options
            for i, start, x in segments:  # logits at p predict p + 1: a continuation's own positions predict x[1:]
                rest, rest_greedy = self._target_scores(
                    logits[row, start - offset : start - offset + len(x) - 1], x[1:], greedy is not None
                )
                results[i] = float(firsts[x[0]] + rest.sum())
                if greedy is not None:
                    greedy[i] = float(best == x[0] and bool(rest_greedy))
        return True

    def _score_shared(
        self,
        batch: list[tuple[list[int], list[tuple[int, list[int]]]]],
        results: list[float],
        greedy: list[float] | None,
    ) -> bool:
        """Score groups of continuations, each sharing its (untruncated) context; see the module docstring.

        The contexts run as one left-padded batch, so every context ends at the same cache index
        and the continuations follow it directly (as in batched generation; sliding-window layers
        see the same distances as unpadded). False, with nothing scored, when the model returns
        no DynamicCache to continue from.
        """
        lengths = torch.tensor([len(ctx) for ctx, _ in batch], dtype=torch.long)
        width = int(lengths.max())
        input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (ctx, _) in enumerate(batch):  # left padding
            input_ids[row, width - len(ctx) :] = torch.tensor(ctx, dtype=torch.long)
            attention[row, width - len(ctx) :] = 1
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._has_logits_to_keep else {}
        out = self.model(
            input_ids=input_ids.to(self.device),
            attention_mask=attention.to(self.device),
            position_ids=positions.to(self.device),
            use_cache=True,
            **kwargs,
        )
        cache = out.get("cache", out.get("past_key_values"))
        if any(len(x) > 1 for _, conts in batch for _, x in conts) and not isinstance(cache, DynamicCache):
            return False
        self._score_continuations(batch, lengths, attention, cache, out.logits[:, -1], results, greedy)
        return True

    def _score_continuations(
        self,
        batch: list[tuple[list[int], list[tuple[int, list[int]]]]],
        lengths: torch.Tensor,
        attention: torch.Tensor,
        cache: Any,
        last: torch.Tensor,
        results: list[float],
        greedy: list[float] | None,
    ) -> None:
        """Every continuation of the batch's contexts, from the contexts' last logits (``last``, one row per
        context) and their cache (``attention``: its mask, ``lengths``: each context's real tokens)."""
        more = [(row, i, x) for row, (_, conts) in enumerate(batch) for i, x in conts if len(x) > 1]
        first = self._logprobs(last)  # each context's last position: the first tokens
        scores = {i: [first[row, x[0]]] for row, (_, conts) in enumerate(batch) for i, x in conts}
        best = first.argmax(-1).tolist() if greedy is not None else None
        flags = {i: best is not None and best[row] == x[0] for row, (_, conts) in enumerate(batch) for i, x in conts}
        more.sort(key=lambda item: -len(item[2]))  # little padding per continuation batch
        chunks = [more[k : k + self.batch_size] for k in range(0, len(more), self.batch_size)]
        for k, chunk in enumerate(chunks):
            rows = torch.tensor([row for row, _, _ in chunk], dtype=torch.long)
            # each forward appends to the cache it is given: copy it for all but the last batch
            past = cache if k == len(chunks) - 1 else copy.deepcopy(cache)
            past.batch_select_indices(rows.to(self.device))  # a context's row once per continuation
            span = len(chunk[0][2]) - 1  # the last token is only a target
            ids = torch.full((len(chunk), span), self.pad_id, dtype=torch.long)
            for j, (_, _, x) in enumerate(chunk):  # right padding: never seen by the real tokens
                ids[j, : len(x) - 1] = torch.tensor(x[:-1], dtype=torch.long)
            mask = torch.cat([attention[rows], torch.ones((len(chunk), span), dtype=torch.long)], dim=1)
            logits = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=(lengths[rows][:, None] + torch.arange(span)).to(self.device),
                use_cache=True,
                **{self._cache_arg: past},
            ).logits
            for j, (_, i, x) in enumerate(chunk):
                rest, rest_greedy = self._target_scores(logits[j, : len(x) - 1], x[1:], greedy is not None)
                scores[i].extend(rest)
                flags[i] = flags[i] and bool(rest_greedy)
        for i, parts in scores.items():
            results[i] = float(torch.stack(parts).sum())
            if greedy is not None:
                greedy[i] = float(flags[i])

    def _run_on_prefix(self, tokens: list[int], shared: int, kv: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
        """One unpadded row: ``tokens[shared:]`` run on top of the first ``shared`` positions of a row's
        per-layer keys/values ``kv`` (none: from the start); the output has the last position's logits."""
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._has_logits_to_keep else {}
        if shared:
            kwargs[self._cache_arg] = DynamicCache(ddp_cache_data=[(k[:, :, :shared], v[:, :, :shared]) for k, v in kv])
        return self.model(
            input_ids=torch.tensor([tokens[shared:]], dtype=torch.long, device=self.device),
            position_ids=torch.arange(shared, len(tokens), device=self.device)[None],
            use_cache=True,
            **kwargs,
        )

    def _score_remembered(
        self,
        batch: list[tuple[list[int], list[tuple[int, list[int]]]]],
        results: list[float],
        greedy: list[float] | None,
        bar: Any,
    ) -> list[tuple[list[int], list[tuple[int, list[int]]]]]:
        """Score the groups whose context starts with a remembered prefix (a quarter of the context at
        least) from that prefix's keys/values, one group per forward; returns the other groups. On CPU
        a forward costs about its tokens, so a group run alone costs no more than in a batch."""
        rest = []
        for ctx, conts in batch:
            shared, kv = max(((_common_prefix(ctx, tokens), kv) for tokens, kv in self._memo), key=lambda t: t[0])
            shared = min(shared, len(ctx) - 1)  # the context's last token must run: its logits score the first
            if shared < max(1, len(ctx) // 4):
                rest.append((ctx, conts))
                continue
            out = self._run_on_prefix(ctx, shared, kv)
            cache = out.get("cache", out.get("past_key_values"))
            lengths, attention = torch.tensor([len(ctx)]), torch.ones((1, len(ctx)), dtype=torch.long)
            self._score_continuations([(ctx, conts)], lengths, attention, cache, out.logits[:, -1], results, greedy)
            self.memo_hits += 1
            bar.update(len(conts))
        return rest

    def _score_plain(
        self,
        items: list[tuple[list[int], int]],
        todo: list[int],
        results: list[float],
        greedy: list[float] | None,
        bar: Any,
    ) -> None:
        """Each request of ``todo`` run whole (context and continuation), in right-padded batches."""
        # longest first (as lm-eval): the first batch shows the peak memory, batches pad little
        order = sorted(todo, key=lambda i: (-len(items[i][0]), tuple(items[i][0])))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            inputs = [items[i][0][:-1] for i in batch]  # the last token is only a target
            width = max(len(x) for x in inputs)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            for row, inp in enumerate(inputs):  # right padding
                input_ids[row, : len(inp)] = torch.tensor(inp, dtype=torch.long)
                attention[row, : len(inp)] = 1
            # logits are only needed from the earliest continuation position on
            first = min(len(inputs[row]) - items[i][1] for row, i in enumerate(batch))
            kwargs: dict[str, Any] = {}
            offset = 0
            if self._has_logits_to_keep:
                kwargs["logits_to_keep"] = width - first
                offset = first
            logits = self.model(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                use_cache=False,
                **kwargs,
            ).logits
            for row, i in enumerate(batch):
                tokens, n_cont = items[i]
                end = len(inputs[row]) - offset  # logits at p predict token p + 1
                scores, all_greedy = self._target_scores(
                    logits[row, end - n_cont : end], tokens[-n_cont:], greedy is not None
                )
                results[i] = float(scores.sum())
                if greedy is not None:
                    greedy[i] = float(bool(all_greedy))
            bar.update(len(batch))


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two token lists share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
