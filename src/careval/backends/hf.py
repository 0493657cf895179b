"""transformers backend (CPU or a single GPU): AutoModelForCausalLM + AutoTokenizer.

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

Shared prompt prefixes (CPU, models whose cache layers all keep every position, i.e. no
sliding window; at most ``_PREFIX_BYTES`` of keys/values kept):

* ``generate`` runs each prompt alone from the longest prefix it shares with a prompt run before
  it in the same call, then decodes the batch from the assembled left-padded cache. The judge's
  prompts share prometheus-eval's instructions, the two rubrics of one answer all but the rubric,
  and repeated prompts (self-consistency, rephrasing) everything: 8 judge prompts of a demo job
  run 1,820 prompt tokens instead of 3,680 (tests/backends/test_judge_speed.py).
* ``generate`` keeps each row's keys/values (prompt and generated tokens) until the next
  ``generate``, and a shared-prefix scoring group whose context starts with one of them runs only
  the rest of its context. The judge asks for the score tokens right after its own prompt and
  feedback (judge_distribution.py), so its second pass costs a few tokens, not a second prefill.

Both give the plain path's numbers up to float rounding (tests/backends/test_prefix_memo.py: the
same generated texts, the same log-likelihoods).

Generation: prompts go through chat.format_prompt, are encoded with the same special-token
rule as scoring, left-truncated to ``max_length - max_new_tokens`` and left-padded in
length-sorted batches; ``model.generate`` decodes greedily (temperature 0) or samples, its
KV cache growing in place (hf_cache.py: no copy of the whole cache per step).

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

import copy
import inspect
import json
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    DynamicLayer,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from .base import Sampling
from .chat import format_prompt, require_chat_template
from .dtype import NATIVE_BFLOAT16, resolve_dtype
from .hf_cache import GrowingLayer, growing_cache
from .tokenization import (
    encode_pair,
    generation_tokens,
    pad_token_id,
    prefix_token_id,
    request_seeds,
    resolve_max_length,
    rolling_pairs,
    rolling_tokens,
    scoring_window,
    shared_prefix_groups,
    truncate_at_stop,
)

log = logging.getLogger(__name__)

# Shared-prefix contexts on CPU: the most left padding a batch of contexts may carry, as a
# share of its real tokens (HFBackend._context_batches).
_CPU_PADDING = 0.1
# The largest 4D attention mask a packed scoring forward may build (batch x width x width entries); a wider
# batch of contexts takes the two-forward shared path instead (HFBackend._score_packed).
_PACKED_MASK_ENTRIES = 64 << 20
# The most keys/values a generate call keeps of its prompts (shared-prefix prefill) and leaves for the
# next scoring call, on CPU only (a GPU's memory is the engine's): 2 GiB holds ~45,000 positions of
# SmolLM2-135M in float32.
_PREFIX_BYTES = 2 << 30

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def torch_dtype(name: str | None) -> Any:
    if name is None or name == "auto":
        return "auto"
    name = resolve_dtype(str(name))  # bfloat16_if_native, where a spec did not pass through ModelSpec.for_job
    try:
        return _DTYPES[str(name).lower()]
    except KeyError:
        raise ValueError(
            f"dtype must be one of float32, bfloat16, float16, auto, {NATIVE_BFLOAT16}; got {name!r}"
        ) from None


# Tokenizers and models a warm worker loaded before forking its jobs (careval.warm, preload below): a job
# forked from it shares their memory and starts without reading the folder. Empty in any other process.
_PRELOADED: dict[tuple, tuple[Any, Any]] = {}


def _folder_state(path: str) -> tuple:
    """What tells one version of a local model folder from another (names, sizes, modification times)."""
    return tuple(sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in os.scandir(path) if f.is_file()))


def _preload_key(path: str, dtype: str | None, trust_remote_code: bool) -> tuple:
    return (os.path.realpath(path), str(torch_dtype(dtype)), bool(trust_remote_code), _folder_state(path))


def load_pretrained(path: str, dtype: str | None = "auto", trust_remote_code: bool = False) -> tuple[Any, Any]:
    """The tokenizer and model of `path` (a local folder or a hub id), the model in `dtype` on the CPU:
    the preloaded pair where this process was forked from a warm worker that loaded the same folder."""
    if _PRELOADED and os.path.isdir(path):
        found = _PRELOADED.get(_preload_key(path, dtype, trust_remote_code))
        if found is not None:
            return found
    check_model_folder(path)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype(dtype), trust_remote_code=trust_remote_code)
    return tokenizer, model.eval()


class ModelFolderError(ValueError):
    """A local model folder transformers cannot read; one line naming the file and the cause."""

    one_line = True  # careval.joblog: the message alone on the console, no traceback


def check_model_folder(path: str) -> None:
    """A local folder's config.json must be JSON: transformers would fail on it deep in a 100-line traceback."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return  # a hub id, or a folder transformers explains itself
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelFolderError(f"{config}: not valid JSON ({error}); prepare or copy the model folder again") from None


def preload(path: str, dtype: str | None = "auto", trust_remote_code: bool = False) -> bool:
    """In a warm worker: load a local folder's tokenizer and model once, for every job forked afterwards
    (load_pretrained). False where the folder is not there (yet); the jobs then load it themselves."""
    if not os.path.isdir(path):
        return False
    key = _preload_key(path, dtype, trust_remote_code)
    if key not in _PRELOADED:
        drop_preloaded(path, dtype)  # an older version of the folder (it was rewritten since)
        _PRELOADED[key] = load_pretrained(path, dtype, trust_remote_code)
    return True


def drop_preloaded(path: str, dtype: str | None = "auto") -> None:
    """Forget what preload() kept of a folder in a dtype (a job forked before keeps its own copy)."""
    wanted = (os.path.realpath(path), str(torch_dtype(dtype)))
    for key in [key for key in _PRELOADED if key[:2] == wanted]:
        del _PRELOADED[key]


class HFBackend:
    """A causal LM run through transformers; implements careval.backends.base.Backend."""

    def __init__(
        self,
        name: str,
        path: str,
        *,
        chat_template: bool = False,
        dtype: str = "auto",
        threads: int | None = None,
        batch_size: int = 1,
        max_length: int | None = None,
        system_prompt: str | None = None,
        device: str | None = None,
        add_bos_token: bool | None = None,
        trust_remote_code: bool = False,
        shared_prefix: bool = True,
    ) -> None:
        if threads:
            torch.set_num_threads(int(threads))
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.path = str(path)
        self.chat_template = bool(chat_template)
        self.system_prompt = system_prompt
        self.batch_size = int(batch_size)
        self.shared_prefix = bool(shared_prefix)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))

        self.tokenizer, model = load_pretrained(self.path, dtype, trust_remote_code)
        if self.chat_template:  # fail at load time, not at the first prompt
            require_chat_template(self.tokenizer)
        self.model = model.to(self.device)  # in eval mode (load_pretrained)
        self.config = self.model.config

        # lm-eval 0.4.13 HFLM: None = the tokenizer's default special tokens (tokenization.py)
        self.add_bos = None if add_bos_token is None else bool(add_bos_token)
        self.max_length = resolve_max_length(self.config, self.tokenizer, max_length)
        self.pad_id = pad_token_id(self.tokenizer)
        self.prefix_id = prefix_token_id(self.tokenizer)
        # (tokens, per-layer (keys, values) of one row) of the last generate call; see the module docstring
        self._memo: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]] = []
        self._prefix_budget = _PREFIX_BYTES if self.device.type == "cpu" else 0
        self.memo_hits = 0  # groups scored on top of a remembered prefix (tests, logs)
        # generate's KV cache grows in place (hf_cache.py) where transformers builds a DynamicCache
        self._growing_cache = bool(getattr(self.model, "_supports_default_dynamic_cache", lambda: False)())
        # every layer keeps every position (no sliding window): prompts prefill from a shared prefix (_prefill)
        self._full_attention = all(type(layer) is GrowingLayer for layer in growing_cache(self.config).layers)
        # a shared context and its continuations in one forward (_score_packed): the attention also takes a
        # custom 4D mask as given (sdpa, eager)
        self.packed = self._full_attention and getattr(self.config, "_attn_implementation", None) in ("sdpa", "eager")
        params = inspect.signature(self.model.forward).parameters
        self._has_logits_to_keep = "logits_to_keep" in params
        # transformers >= 5.2x names the KV cache argument `cache`; earlier 5.x `past_key_values`
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

        # Keep only the token ids of the model's generation config (see module docstring).
        source = getattr(self.model, "generation_config", None)
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids: list[int] = [] if eos is None else ([int(eos)] if isinstance(eos, int) else [int(e) for e in eos])
        bos = getattr(source, "bos_token_id", None) if source is not None else None
        self.model.generation_config = GenerationConfig(
            eos_token_id=self.eos_ids or None,
            bos_token_id=bos if bos is not None else self.tokenizer.bos_token_id,
            pad_token_id=self.pad_id,
        )

    def __repr__(self) -> str:
        return (
            f"HFBackend(name={self.name!r}, path={self.path!r}, device={self.device}, "
            f"dtype={self.model.dtype}, max_length={self.max_length}, add_bos={self.add_bos})"
        )

    # ------------------------------------------------------------------ generation
    def format(self, prompt: str) -> str:
        return format_prompt(self.tokenizer, prompt, self.chat_template, self.system_prompt)

    @torch.inference_mode()
    def generate(self, prompts: list[str], sampling: Sampling) -> list[str]:
        if not prompts:
            return []
        torch.manual_seed(sampling.seed)
        texts = [self.format(p) for p in prompts]
        room = self.max_length - sampling.max_new_tokens
        ids = []
        for text in texts:
            kept, n = generation_tokens(self.tokenizer, text, add_bos=self.add_bos, max_prompt_tokens=room)
            if n > room:
                log.warning("%s: prompt of %d tokens left-truncated to %d", self.name, n, room)
            ids.append(kept)
        seeds = request_seeds(sampling.seed, texts)
        order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
        results: list[str] = [""] * len(ids)
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
                memo_bytes += self._remember(ids[i] + new, cache, row, width - len(ids[i]), memo_bytes)
            bar.update(len(batch))
        bar.close()
        return results

    # ------------------------------------------------------------------ scoring
    def loglikelihood(self, pairs: list[tuple[str, str]]) -> list[float]:
        requests = [encode_pair(self.tokenizer, c, x, add_bos=self.add_bos) for c, x in pairs]
        return self.score_tokens(requests, desc=f"{self.name}: loglikelihood")

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        windows: list[tuple[list[int], list[int]]] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            tokens = rolling_tokens(self.tokenizer, text, self.add_bos)
            for pair in rolling_pairs(tokens, self.prefix_id, self.max_length):
                windows.append(pair)
                owner.append(i)
        scores = self.score_tokens(windows, desc=f"{self.name}: rolling windows")
        totals = [0.0] * len(texts)
        for i, s in zip(owner, scores):  # windows in text order, as lm-eval sums them
            totals[i] += s
        return totals

    @torch.inference_mode()
    def score_tokens(self, requests: Sequence[tuple[Sequence[int], Sequence[int]]], desc: str = "") -> list[float]:
        """Log-likelihood of each continuation token list given its context token list."""
        items = [scoring_window(c, x, self.max_length) for c, x in requests]  # raises on bad input first
        groups, rest = (
            shared_prefix_groups(requests, self.max_length) if self.shared_prefix else ([], range(len(items)))
        )
        results = [math.nan] * len(items)
        bar = tqdm(total=len(items), desc=desc or f"{self.name}: score", unit="req", dynamic_ncols=True)
        for members in self._context_batches([len(requests[g[0]][0]) for g in groups], groups):
            batch = [(list(requests[g[0]][0]), [(i, list(requests[i][1])) for i in g]) for g in members]
            if self.shared_prefix and self._memo:
                batch = self._score_remembered(batch, results, bar)
            if not batch:
                continue
            if self.shared_prefix and (self._score_packed(batch, results) or self._score_shared(batch, results)):
                bar.update(sum(len(conts) for _, conts in batch))
            else:  # the model keeps no DynamicCache to continue from: plain path from now on
                self.shared_prefix = False
                rest = [*rest, *(i for _, conts in batch for i, _ in conts)]
        self._score_plain(items, sorted(rest), results, bar)
        bar.close()
        return results

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

    def _target_logprobs(self, logits: torch.Tensor, targets: Sequence[int]) -> torch.Tensor:
        """The log-probability of ``targets[k]`` under ``logits[k]``, for each k."""
        target = torch.tensor(list(targets), dtype=torch.long, device=logits.device)
        return self._logprobs(logits).gather(-1, target[:, None])[:, 0]

    def _score_packed(self, batch: list[tuple[list[int], list[tuple[int, list[int]]]]], results: list[float]) -> bool:
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
            for i, start, x in segments:  # logits at p predict p + 1: a continuation's own positions predict x[1:]
                rest = self._target_logprobs(logits[row, start - offset : start - offset + len(x) - 1], x[1:])
                results[i] = float(firsts[x[0]] + rest.sum())
        return True

    def _score_shared(self, batch: list[tuple[list[int], list[tuple[int, list[int]]]]], results: list[float]) -> bool:
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
        self._score_continuations(batch, lengths, attention, cache, out.logits[:, -1], results)
        return True

    def _score_continuations(
        self,
        batch: list[tuple[list[int], list[tuple[int, list[int]]]]],
        lengths: torch.Tensor,
        attention: torch.Tensor,
        cache: Any,
        last: torch.Tensor,
        results: list[float],
    ) -> None:
        """Every continuation of the batch's contexts, from the contexts' last logits (``last``, one row per
        context) and their cache (``attention``: its mask, ``lengths``: each context's real tokens)."""
        more = [(row, i, x) for row, (_, conts) in enumerate(batch) for i, x in conts if len(x) > 1]
        first = self._logprobs(last)  # each context's last position: the first tokens
        scores = {i: [first[row, x[0]]] for row, (_, conts) in enumerate(batch) for i, x in conts}
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
                scores[i].extend(self._target_logprobs(logits[j, : len(x) - 1], x[1:]))
        for i, parts in scores.items():
            results[i] = float(torch.stack(parts).sum())

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

    # ------------------------------------------------------------------ shared prompt prefixes
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

    def _score_remembered(
        self, batch: list[tuple[list[int], list[tuple[int, list[int]]]]], results: list[float], bar: Any
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
            self._score_continuations([(ctx, conts)], lengths, attention, cache, out.logits[:, -1], results)
            self.memo_hits += 1
            bar.update(len(conts))
        return rest

    def _score_plain(self, items: list[tuple[list[int], int]], todo: list[int], results: list[float], bar: Any) -> None:
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
                results[i] = float(self._target_logprobs(logits[row, end - n_cont : end], tokens[-n_cont:]).sum())
            bar.update(len(batch))


def _left_pad(states: torch.Tensor, width: int) -> torch.Tensor:
    """[1, heads, n, dim] keys or values as [1, heads, width, dim], zeros in front (masked out)."""
    pad = states.new_zeros((*states.shape[:2], width - states.shape[2], states.shape[3]))
    return torch.cat([pad, states], dim=2)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two token lists share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


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
