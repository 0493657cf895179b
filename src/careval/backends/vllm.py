"""vLLM backend (offline ``LLM``); optional: needs the ``gpu`` extra (``pip install -e .[gpu]``).

Token ids come from the same helpers as the hf backend (tokenization.py), with the vLLM
tokenizer, and are handed to vLLM as token prompts, so both backends see identical ids.

* generate: one SamplingParams per prompt; temperature 0 is greedy, otherwise each
  prompt gets its own seed from tokenization.request_seeds (vLLM seeds each request's
  sampler), so samples do not depend on batch order or company. vLLM's RNG is not
  torch's: sampled texts differ from the hf backend's; greedy texts agree (up to ties).
* loglikelihood: ``SamplingParams(max_tokens=1, prompt_logprobs=0)`` on the scoring
  window's ids; the prompt logprobs of the continuation positions are summed.
  Requests with prompt logprobs skip vLLM's prefix cache (vLLM does this by itself).
* context: vLLM refuses a prompt that does not leave room for one generated token, and a
  scoring window is ``max_length + 1`` tokens, so the engine runs with
  ``max_model_len = max_length + 2``. Where that would pass the model's own limit
  (the default max_length *is* that limit) the scoring window shrinks to limit - 2 tokens
  (``self.max_length``; logged), which changes results only for sequences longer than it.
"""

from __future__ import annotations

import logging
from typing import Any

from .base import Backend, Sampling, Usage
from .chat import require_chat_template
from .registry import register_backend
from .tokenization import (
    prefix_token_id,
    request_seeds,
    resolve_max_length,
    scoring_window,
    truncate_at_stop,
)
from .vllm_base import CAPABILITIES, VLLMRequests

log = logging.getLogger(__name__)


INSTALL_HINT = (
    "backend 'vllm' needs vLLM, which is not installed: install the gpu extra "
    "with `pip install -e .[gpu]` (or use backend: hf)"
)


def import_vllm() -> Any:
    """Import vllm, or raise a one-line ImportError that says how to install it."""
    try:
        import vllm
    except ImportError as err:
        missing = getattr(err, "name", None)
        if missing is None or missing == "vllm" or missing.startswith("vllm."):
            raise ImportError(INSTALL_HINT) from None
        raise ImportError(f"vLLM is installed but failed to import ({err}); reinstall the gpu extra") from None
    return vllm


def engine_lengths(name: str, config: Any, max_length: int | None) -> tuple[int, int]:
    """(the engine's max_model_len, the scoring window) of a model config and the entry's max_length
    (see the module docstring); the shared engine's server and its clients use the same (vllm_server.py)."""
    limit = resolve_max_length(config, None, None)
    wanted = resolve_max_length(config, None, max_length)
    engine_len = min(wanted + 2, limit)
    window = min(wanted, engine_len - 2)
    if window < wanted:
        log.warning(
            "%s: vLLM needs max_length + 2 <= the model's limit (%d); scoring window is %d tokens, not %d",
            name,
            limit,
            window,
            wanted,
        )
    return engine_len, window


@register_backend("vllm", CAPABILITIES)
def load(spec: Any) -> Backend:
    """A job's vLLM backend: a client of the model's shared engine where one serves the job (``engine: shared``,
    vllm_server.py: no engine here, no vLLM import), else an engine of its own."""
    if spec.engine_url_file:
        from .vllm_server import VLLMServerBackend

        return VLLMServerBackend.from_spec(spec)
    return VLLMBackend.from_spec(spec)


class VLLMBackend(VLLMRequests):
    """A causal LM served by vLLM's offline engine (the Backend interface: vllm_base.py)."""

    def __init__(
        self,
        name: str,
        path: str,
        *,
        chat_template: bool = False,
        dtype: str = "auto",
        batch_size: int = 1,
        max_length: int | None = None,
        system_prompt: str | None = None,
        gpus: int = 1,
        seed: int = 1234,
        add_bos_token: bool | None = None,
        gpu_memory_utilization: float | None = None,
        trust_remote_code: bool = False,
        **engine_kwargs: Any,
    ) -> None:
        vllm = import_vllm()
        from transformers import AutoConfig

        self.name = name
        self.path = str(path)
        self.chat_template = bool(chat_template)
        self.system_prompt = system_prompt
        self.batch_size = int(batch_size)  # vLLM schedules its own batches; kept for the record
        self.tensor_parallel = int(gpus or 1)

        config = AutoConfig.from_pretrained(self.path, trust_remote_code=trust_remote_code)
        if self.chat_template:  # fail before the (slow) engine start, not at the first prompt
            from transformers import AutoTokenizer

            require_chat_template(AutoTokenizer.from_pretrained(self.path, trust_remote_code=trust_remote_code))
        engine_len, self.max_length = engine_lengths(name, config, max_length)

        kwargs: dict[str, Any] = dict(
            model=self.path,
            dtype=dtype or "auto",
            seed=int(seed),
            tensor_parallel_size=self.tensor_parallel,
            max_model_len=engine_len,
            trust_remote_code=trust_remote_code,
        )
        if gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = float(gpu_memory_utilization)
        kwargs.update(engine_kwargs)
        self.llm: Any = vllm.LLM(**kwargs)  # None once closed
        self._SamplingParams = vllm.SamplingParams
        self.tokenizer = self.llm.get_tokenizer()
        self.add_bos = None if add_bos_token is None else bool(add_bos_token)  # as the hf backend
        self.prefix_id = prefix_token_id(self.tokenizer)

    @classmethod
    def from_spec(cls, spec: Any) -> VLLMBackend:
        """The engine a careval.models.spec.ModelSpec describes: tensor-parallel over its GPUs, its vllm_args."""
        return cls(
            spec.name,
            spec.path,
            chat_template=spec.chat_template,
            dtype=spec.dtype,
            batch_size=spec.batch_size,
            max_length=spec.max_length,
            system_prompt=spec.system_prompt,
            gpus=spec.gpus,
            **dict(spec.vllm_args),
        )

    @property
    def gpus(self) -> int:
        return self.tensor_parallel

    def close(self) -> None:
        """Stop vLLM's engine processes and free the accelerator (the backend is unusable after)."""
        engine = getattr(getattr(self, "llm", None), "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        self.llm = None

    def __repr__(self) -> str:
        return (
            f"VLLMBackend(name={self.name!r}, path={self.path!r}, max_length={self.max_length}, add_bos={self.add_bos})"
        )

    # ------------------------------------------------------------------ generation

    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        if not prompts:
            return []
        texts = [self.format(p, instruction) for p in prompts]
        room = self.max_length - sampling.max_new_tokens
        token_prompts = [{"prompt_token_ids": ids} for ids in self.generation_ids(texts, room)]
        seeds = request_seeds(sampling.seed, texts)
        params = [
            self._SamplingParams(
                max_tokens=sampling.max_new_tokens,
                temperature=sampling.temperature,
                top_p=sampling.top_p if not sampling.greedy else 1.0,
                seed=None if sampling.greedy else seed,
                stop=list(sampling.stop) or None,
                skip_special_tokens=True,
            )
            for seed in seeds
        ]
        outputs = self.llm.generate(token_prompts, params, use_tqdm=True)
        self.last_usage = [
            Usage(len(p["prompt_token_ids"]), len(o.outputs[0].token_ids)) for p, o in zip(token_prompts, outputs)
        ]
        return [truncate_at_stop(o.outputs[0].text, sampling.stop) for o in outputs]

    # ------------------------------------------------------------------ the engine's primitives
    def sample_token_ids(
        self, prompt_ids: list[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[tuple[list[int], float]]:
        """``n`` sampled continuations (temperature 1, top-p) of exactly ``max_tokens`` token ids
        -- ``min_tokens`` holds EOS back -- with their joint log-probabilities, for
        sample_continuations. vLLM reports the model's raw log-probabilities."""
        params = self._SamplingParams(
            n=n,
            max_tokens=max_tokens,
            min_tokens=max_tokens,
            temperature=1.0,
            top_p=top_p,
            seed=seed,
            logprobs=0,
            detokenize=False,
        )
        out = self.llm.generate([{"prompt_token_ids": list(prompt_ids)}], params, use_tqdm=False)[0]
        results = []
        for completion in out.outputs:
            ids = list(completion.token_ids)
            total = completion.cumulative_logprob
            if total is None:  # not reported: sum the sampled tokens' own entries
                total = sum(step[tok].logprob for step, tok in zip(completion.logprobs, ids))
            results.append((ids, float(total)))
        return results

    def token_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        """log P(token | the tokens before it) for each ``sequences[i][starts[i]:]``, from prompt logprobs."""
        if not sequences:
            return []
        params = self._SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        outputs = self.llm.generate([{"prompt_token_ids": list(s)} for s in sequences], params, use_tqdm=True)
        return [
            [float(out.prompt_logprobs[pos][seq[pos]].logprob) for pos in range(start, len(seq))]
            for seq, start, out in zip(sequences, starts, outputs)
        ]

    def score_tokens(self, requests: list[tuple[list[int], list[int]]]) -> list[float]:
        items = [scoring_window(c, x, self.max_length) for c, x in requests]
        if not items:
            return []
        params = self._SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        outputs = self.llm.generate([{"prompt_token_ids": t} for t, _ in items], params, use_tqdm=True)
        results = []
        for (tokens, n_cont), out in zip(items, outputs):
            logprobs = out.prompt_logprobs  # one entry per prompt token, None for the first
            total = 0.0
            for pos in range(len(tokens) - n_cont, len(tokens)):
                total += logprobs[pos][tokens[pos]].logprob
            results.append(float(total))
        return results
