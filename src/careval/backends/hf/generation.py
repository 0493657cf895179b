"""The hf backend's generation: chat-formatted prompts, seeded sampling, stop strings, shared prompt prefixes.

Prompts go through chat.format_prompt, are encoded with the same special-token rule as scoring,
left-truncated to ``max_length - max_new_tokens`` and left-padded in length-sorted batches;
``model.generate`` decodes greedily (temperature 0) or samples, its KV cache growing in place (cache.py:
no copy of the whole cache per step).

Shared prompt prefixes (CPU, models whose cache layers all keep every position, i.e. no
sliding window; at most ``_PREFIX_BYTES`` of keys/values kept):

* ``generate`` runs each prompt alone from the longest prefix it shares with a prompt run before
  it in the same call, then decodes the batch from the assembled left-padded cache. The judge's
  prompts share prometheus-eval's instructions, the two rubrics of one answer all but the rubric,
  and repeated prompts (self-consistency, rephrasing) everything: 8 judge prompts of a demo job
  run 1,820 prompt tokens instead of 3,680 (tests/backends/test_judge_speed.py).
* ``generate`` keeps each row's keys/values (prompt and generated tokens) until the next
  ``generate``, for the next scoring call (scoring.py, ``_score_remembered``).

Both give the plain path's numbers up to float rounding (tests/backends/test_prefix_memo.py: the
same generated texts).

Determinism
-----------
* greedy: a pure argmax over the logits. The model's own generation_config sampling
  defaults (temperature, top_k, repetition_penalty, ...) are dropped; only its eos/bos/pad
  ids are kept, as vLLM does when given explicit SamplingParams. Reruns are identical.
  Batching only adds left padding, which changes logits by float rounding (~1e-6), so a
  batched greedy text can differ from the unbatched one only at a near-exact tie.
* sampling: ``torch.manual_seed(sampling.seed)`` once per call, and each prompt draws from
  its own ``torch.Generator`` seeded by (seed, prompt text, occurrence of that prompt in
  the call) -- tokenization.request_seeds. A sampled completion therefore does not depend
  on batch size, on the order of the prompts or on which other prompts are in the call,
  up to the same rounding effect of padding (a draw can flip only when it falls within
  rounding distance of a token's cumulative-probability boundary). Reruns are identical
  on the same machine, torch version and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import (
    DynamicCache,
    DynamicLayer,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from ..base import Sampling, Usage
from ..tokenization import request_seeds, truncate_at_stop
from .cache import growing_cache
from .scoring import _common_prefix

# The most keys/values a generate call keeps of its prompts (shared-prefix prefill) and leaves for the
# next scoring call, on CPU only (a GPU's memory is the engine's): 2 GiB holds ~45,000 positions of
# SmolLM2-135M in float32.
_PREFIX_BYTES = 2 << 30


class GenerationMixin:
    """HFBackend's generate (backend.py holds the model, tokenizer and settings it reads)."""

    name: str
    model: Any
    tokenizer: Any
    config: Any
    device: torch.device
    batch_size: int
    max_length: int
    add_bos: bool | None
    pad_id: int
    eos_ids: list[int]
    _memo: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]]
    _prefix_budget: int
    _growing_cache: bool
    _full_attention: bool
    _cache_arg: str

    _run_on_prefix: Callable[[list[int], int, list[tuple[torch.Tensor, torch.Tensor]]], Any]  # scoring.py's
    format: Callable[[str, str | None], str]  # tokenization.TokenizerRequests'
    generation_ids: Callable[[Sequence[str], int], list[list[int]]]
    last_usage: Sequence[Usage]

    @torch.inference_mode()
    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        torch.manual_seed(sampling.seed)
        texts = [self.format(p, instruction) for p in prompts]
        room = self.max_length - sampling.max_new_tokens
        ids = self.generation_ids(texts, room)
        seeds = request_seeds(sampling.seed, texts)
        order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
        results: list[str] = [""] * len(ids)
        usage = [Usage(len(prompt), 0) for prompt in ids]
        self._memo.clear()
        memo_bytes = 0
        prefixes: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]] = []  # this call's prompts run

        bar = tqdm(total=len(ids), desc=f"{self.name}: generate", unit="prompt", dynamic_ncols=True)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):  # left padding
                n = len(ids[i])
                input_ids[row, width - n :] = torch.tensor(ids[i], dtype=torch.long)
                attention[row, width - n :] = 1

            processors = LogitsProcessorList()
            if not sampling.greedy:
                processors.append(_SeededSampler([seeds[i] for i in batch], sampling.temperature, sampling.top_p))
            criteria = StoppingCriteriaList()
            if sampling.stop:
                criteria.append(_StopStrings(self.tokenizer, sampling.stop, width))
            config = GenerationConfig(
                max_new_tokens=sampling.max_new_tokens, do_sample=False, use_cache=True, return_dict_in_generate=True
            )
            past = None
            if self._growing_cache:
                rows = [ids[i] for i in batch]
                past = self._prefill(rows, width, prefixes) if self._prefix_budget else growing_cache(self.config)
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=criteria,
                **({self._cache_arg: past} if past is not None else {}),
            )
            cache = out.get("past_key_values")
            for row, i in enumerate(batch):
                new = out.sequences[row, width:].tolist()
                for k, tok in enumerate(new):  # drop the first EOS and the padding after it
                    if tok in self.eos_ids:
                        new = new[:k]
                        break
                text = self.tokenizer.decode(new, skip_special_tokens=True)
                results[i] = truncate_at_stop(text, sampling.stop)
                usage[i] = Usage(len(ids[i]), len(new))
                memo_bytes += self._remember(ids[i] + new, cache, row, width - len(ids[i]), memo_bytes)
            bar.update(len(batch))
        bar.close()
        self.last_usage = usage
        return results

    def _prefill(
        self,
        rows: list[list[int]],
        width: int,
        prefixes: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]],
    ) -> Any:
        """The batch's left-padded cache of all but each prompt's last token (generate runs that one), each
        prompt run alone from the longest prefix it shares with a prompt of ``prefixes`` (those run before it
        in this call; see the module docstring). A growing cache without prefill where a layer has a
        sliding window; None (generate builds its own) when every prompt is one token."""
        cache = growing_cache(self.config)
        if width < 2 or not self._full_attention:
            return None if width < 2 else cache
        per_row: list[list[tuple[torch.Tensor, torch.Tensor]] | None] = []
        used = sum(2 * k.nbytes for _, kv in prefixes for k, _ in kv)
        for tokens in rows:
            run = tokens[:-1]
            if not run:  # a one-token prompt: nothing before its last token, all padding here
                per_row.append(None)
                continue
            shared, kv = max(((_common_prefix(run, t), kv) for t, kv in prefixes), key=lambda x: x[0], default=(0, []))
            if shared < len(run):
                out = self._run_on_prefix(run, shared, kv)
                layers = [(layer.keys, layer.values) for layer in out.get("cache", out.get("past_key_values")).layers]
            else:  # a repeated prompt, or the start of one run before
                layers = [(k[:, :, :shared], v[:, :, :shared]) for k, v in kv]
            per_row.append(layers)
            size = sum(2 * k.nbytes for k, _ in layers)
            if used + size <= self._prefix_budget:
                prefixes.append((run, layers))
                used += size
        # the longest prompt has at least two tokens (width >= 2): its row gives the shapes of the empty ones
        template = next(layers for layers in per_row if layers is not None)
        for index, layer in enumerate(cache.layers):  # left padding, as the batch's input_ids
            keys, values = (
                torch.cat(
                    [
                        _left_pad(template[index][part][:, :, :0] if kv is None else kv[index][part], width - 1)
                        for kv in per_row
                    ]
                )
                for part in (0, 1)
            )
            layer.update(keys, values)  # pyright: ignore[reportAttributeAccessIssue]  (a full-attention layer here)
        return cache

    def _remember(self, tokens: list[int], cache: Any, row: int, start: int, used: int) -> int:
        """Keep row ``row`` of a generate call's cache (its real positions from ``start`` on) for
        _score_remembered, within the byte budget; returns the bytes kept (0: not kept)."""
        layers = getattr(cache, "layers", None)
        if not self._prefix_budget or not isinstance(cache, DynamicCache) or not layers:
            return 0
        if any(not isinstance(layer, DynamicLayer) or layer.is_sliding for layer in layers):
            return 0  # a sliding window drops early positions: nothing whole to continue from
        length = min(len(tokens), cache.get_seq_length() - start)  # the last generated token never ran
        size = sum(2 * layer.keys[row, :, start : start + length].nbytes for layer in layers)
        if length < 1 or used + size > self._prefix_budget:
            return 0
        kept = [
            (
                layer.keys[row : row + 1, :, start : start + length].clone(),
                layer.values[row : row + 1, :, start : start + length].clone(),
            )
            for layer in layers
        ]
        self._memo.append((list(tokens[:length]), kept))
        return size


def _left_pad(states: torch.Tensor, width: int) -> torch.Tensor:
    """[1, heads, n, dim] keys or values as [1, heads, width, dim], zeros in front (masked out)."""
    pad = states.new_zeros((*states.shape[:2], width - states.shape[2], states.shape[3]))
    return torch.cat([pad, states], dim=2)


class _SeededSampler(LogitsProcessor):
    """Samples one token per row from its own generator and leaves only that token finite,
    so generate's greedy step picks it (temperature, then nucleus/top-p, then inverse CDF)."""

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float) -> None:
        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]
        self.temperature = float(temperature)
        self.top_p = float(top_p)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        probs = torch.softmax(scores.float() / self.temperature, dim=-1).cpu()
        chosen = []
        for row, gen in enumerate(self.generators):
            p = probs[row]
            p_sorted, idx = torch.sort(p, descending=True, stable=True)
            if self.top_p < 1.0:
                # keep the smallest head whose mass reaches top_p (the first token always)
                keep = int(((p_sorted.cumsum(0) - p_sorted) < self.top_p).sum())
                p_sorted, idx = p_sorted[:keep], idx[:keep]
            cdf = p_sorted.double().cumsum(0)
            u = torch.rand((), generator=gen, dtype=torch.float64) * cdf[-1]
            k = int(torch.searchsorted(cdf, u, right=True).clamp(max=len(cdf) - 1))
            chosen.append(int(idx[k]))
        out = torch.full_like(scores, -math.inf)
        rows = torch.arange(len(chosen), device=scores.device)
        out[rows, torch.tensor(chosen, device=scores.device)] = 0.0
        return out


class _StopStrings(StoppingCriteria):
    """Marks a row done once any stop string appears in its generated text."""

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_width: int) -> None:
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.prompt_width = prompt_width
        # a token decodes to >= 1 character, or to a part of one (byte fallback: <= 4 bytes)
        self.lookback = 4 * max(len(s) for s in self.stop) + 2

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        tail = input_ids[:, self.prompt_width :][:, -self.lookback :].tolist()
        texts = self.tokenizer.batch_decode(tail, skip_special_tokens=False)
        done = [any(s in t for s in self.stop) for t in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
