"""transformers backend (CPU or a single GPU): AutoModelForCausalLM + AutoTokenizer.

Scoring follows lm-evaluation-harness's HFLM (see tokenization.py for the token rules):
right-padded batches sorted by length (longest first), ``log_softmax`` in float32, results
in input order. Padding never changes a score: causal attention does not look right, and
the attention mask hides the padding anyway.

Generation: prompts go through chat.format_prompt, are encoded with the same special-token
rule as scoring, left-truncated to ``max_length - max_new_tokens`` and left-padded in
length-sorted batches; ``model.generate`` decodes greedily (temperature 0) or samples.

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

import inspect
import logging
import math
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from .base import Sampling
from .chat import format_prompt, require_chat_template
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
    truncate_at_stop,
)

log = logging.getLogger(__name__)

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
    try:
        return _DTYPES[str(name).lower()]
    except KeyError:
        raise ValueError(f"dtype must be one of float32, bfloat16, float16, auto; got {name!r}") from None


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
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))

        self.tokenizer = AutoTokenizer.from_pretrained(self.path, trust_remote_code=trust_remote_code)
        if self.chat_template:  # fail at load time, not at the first prompt
            require_chat_template(self.tokenizer)
        model = AutoModelForCausalLM.from_pretrained(
            self.path, dtype=torch_dtype(dtype), trust_remote_code=trust_remote_code
        )
        self.model = model.to(self.device).eval()
        self.config = self.model.config

        # lm-eval 0.4.13 HFLM: None = the tokenizer's default special tokens (tokenization.py)
        self.add_bos = None if add_bos_token is None else bool(add_bos_token)
        self.max_length = resolve_max_length(self.config, self.tokenizer, max_length)
        self.pad_id = pad_token_id(self.tokenizer)
        self.prefix_id = prefix_token_id(self.tokenizer)
        self._has_logits_to_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters

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
            config = GenerationConfig(max_new_tokens=sampling.max_new_tokens, do_sample=False, use_cache=True)
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=criteria,
            )
            for row, i in enumerate(batch):
                new = out[row, width:].tolist()
                for k, tok in enumerate(new):  # drop the first EOS and the padding after it
                    if tok in self.eos_ids:
                        new = new[:k]
                        break
                text = self.tokenizer.decode(new, skip_special_tokens=True)
                results[i] = truncate_at_stop(text, sampling.stop)
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
        """Log-likelihood of each continuation token list given its context token list.

        Requests whose model inputs are the same tokens (e.g. the judge's five one-token scores
        after one context) share one forward pass, as lm-eval's one-token-continuation cache does:
        the logits of a row do not depend on the token it is asked to predict.
        """
        items = [scoring_window(c, x, self.max_length) for c, x in requests]
        # longest first (as lm-eval): the first batch shows the peak memory, batches pad little
        order = sorted(range(len(items)), key=lambda i: (-len(items[i][0]), tuple(items[i][0])))
        groups: dict[tuple[int, ...], list[int]] = {}
        for i in order:
            groups.setdefault(tuple(items[i][0][:-1]), []).append(i)  # the last token is only a target
        unique = list(groups.items())
        results = [math.nan] * len(items)
        bar = tqdm(total=len(items), desc=desc or f"{self.name}: score", unit="req", dynamic_ncols=True)
        for start in range(0, len(unique), self.batch_size):
            batch = unique[start : start + self.batch_size]
            width = max(len(inp) for inp, _ in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            for row, (inp, _) in enumerate(batch):  # right padding
                input_ids[row, : len(inp)] = torch.tensor(inp, dtype=torch.long)
                attention[row, : len(inp)] = 1
            # logits are only needed from the earliest continuation position on
            first = min(len(inp) - items[i][1] for inp, members in batch for i in members)
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
            for row, (inp, members) in enumerate(batch):
                end = len(inp) - offset  # logits at p predict token p + 1
                for i in members:
                    tokens, n_cont = items[i]
                    logprobs = torch.log_softmax(logits[row, end - n_cont : end].float(), dim=-1)
                    target = torch.tensor(tokens[-n_cont:], dtype=torch.long, device=logprobs.device)
                    results[i] = float(logprobs.gather(-1, target[:, None]).sum())
            bar.update(sum(len(members) for _, members in batch))
        bar.close()
        return results


class _SeededSampler(LogitsProcessor):
    """Samples one token per row from its own generator and leaves only that token finite,
    so generate's greedy step picks it (temperature, then nucleus/top-p, then inverse CDF)."""

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float) -> None:
        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]
        self.temperature = float(temperature)
        self.top_p = float(top_p)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
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

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        tail = input_ids[:, self.prompt_width :][:, -self.lookback :].tolist()
        texts = self.tokenizer.batch_decode(tail, skip_special_tokens=False)
        done = [any(s in t for s in self.stop) for t in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
