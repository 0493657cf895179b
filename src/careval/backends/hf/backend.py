"""The transformers backend (CPU or a single GPU): AutoModelForCausalLM + AutoTokenizer behind the Backend interface.

One class over three concerns, one module each: scoring.py (log-likelihoods, lm-eval's HFLM rules, the
shared-prefix scorer), generation.py (generate: seeded sampling, stop strings, shared prompt prefixes) and
relaxed.py (sampled continuations and target log-probabilities, Relaxed Perplexity's token-level pair);
loading.py reads a model folder. The package's __init__ registers it as backend ``hf``.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from transformers import GenerationConfig

from ..base import Backend
from ..chat import require_chat_template
from ..registry import capabilities as registered_capabilities
from ..tokenization import TokenizerRequests, pad_token_id, prefix_token_id, resolve_max_length
from .cache import GrowingLayer, growing_cache
from .generation import _PREFIX_BYTES, GenerationMixin
from .loading import load_pretrained
from .relaxed import Sampled, TokenLevelMixin
from .scoring import ScoringMixin


class HFBackend(ScoringMixin, GenerationMixin, TokenLevelMixin, TokenizerRequests, Backend):
    """A causal LM run through transformers: a loaded tokenizer and model (:meth:`load` reads a folder)."""

    backend = "hf"
    capabilities = registered_capabilities("hf")  # declared where it registers (hf/__init__.py)

    def __init__(
        self,
        name: str,
        tokenizer: Any,
        model: Any,
        *,
        path: str = "",
        chat_template: bool = False,
        batch_size: int = 1,
        max_length: int | None = None,
        system_prompt: str | None = None,
        device: str | None = None,
        add_bos_token: bool | None = None,
        shared_prefix: bool = True,
    ) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.path = str(path)
        self.chat_template = bool(chat_template)
        self.system_prompt = system_prompt
        self.batch_size = int(batch_size)
        self.shared_prefix = bool(shared_prefix)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.tokenizer = tokenizer
        if self.chat_template:  # fail at load time, not at the first prompt
            require_chat_template(self.tokenizer)
        self.model = model.eval().to(self.device)
        self.config = self.model.config

        # lm-eval 0.4.13 HFLM: None = the tokenizer's default special tokens (tokenization.py)
        self.add_bos = None if add_bos_token is None else bool(add_bos_token)
        self.max_length = resolve_max_length(self.config, self.tokenizer, max_length)
        self.pad_id = pad_token_id(self.tokenizer)
        self.prefix_id = prefix_token_id(self.tokenizer)
        # (tokens, per-layer (keys, values) of one row) of the last generate call; generation.py
        self._sampled: tuple[tuple[int, ...], Sampled] | None = None  # relaxed.py
        self._memo: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]] = []
        self._prefix_budget = _PREFIX_BYTES if self.device.type == "cpu" else 0
        self.memo_hits = 0  # groups scored on top of a remembered prefix (tests, logs)
        # generate's KV cache grows in place (cache.py) where transformers builds a DynamicCache
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

    @classmethod
    def load(
        cls,
        name: str,
        path: str,
        *,
        dtype: str = "auto",
        threads: int | None = None,
        trust_remote_code: bool = False,
        **options: Any,
    ) -> HFBackend:
        """The backend of a model folder (or hub id) in `dtype`, torch on `threads` CPU threads; `options` as __init__."""
        if threads:
            torch.set_num_threads(int(threads))
        tokenizer, model = load_pretrained(str(path), dtype, trust_remote_code)
        return cls(name, tokenizer, model, path=str(path), **options)

    @classmethod
    def from_spec(cls, spec: Any) -> HFBackend:
        """The backend a careval.models.spec.ModelSpec describes (as its job runs it: ModelSpec.for_job)."""
        return cls.load(
            spec.name,
            spec.path,
            dtype=spec.dtype,
            threads=spec.threads,
            chat_template=spec.chat_template,
            batch_size=spec.batch_size,
            max_length=spec.max_length,
            system_prompt=spec.system_prompt,
        )

    def __repr__(self) -> str:
        return (
            f"HFBackend(name={self.name!r}, path={self.path!r}, device={self.device}, "
            f"dtype={self.model.dtype}, max_length={self.max_length}, add_bos={self.add_bos})"
        )

    @property
    def gpus(self) -> int:
        return 1 if self.device.type == "cuda" else 0
