"""What vLLM's two backends share: careval's token ids and the interface's requests over vLLM's primitives.

The per-job engine (vllm.py, ``VLLMBackend``) and the shared engine's client (vllm_server.py,
``VLLMServerBackend``) differ only in how they reach an engine; each implements the primitives
``score_tokens`` (summed prompt log-probabilities of a scoring window), ``token_logprobs`` (per token)
and ``sample_token_ids`` (seeded samples with their joint log-probability), and ``generate``. The
prompts and token ids are careval's own (tokenization.py), so both see the ids the hf backend sees.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from .base import Backend, Capabilities, Continuation, Prefix, PrefixedTarget, step_prefixes
from .tokenization import TokenizerRequests, request_seeds

CAPABILITIES = Capabilities(prompt_logprobs=True, top_logprobs=True, chat_template=True, max_gpus=None)


class VLLMRequests(TokenizerRequests, Backend):
    """The Backend interface over a vLLM engine's primitives (the subclasses reach the engine)."""

    backend = "vllm"
    capabilities = CAPABILITIES
    prefix_id: int

    @abstractmethod
    def score_tokens(self, requests: list[tuple[list[int], list[int]]]) -> list[float]:
        """log P(continuation | context) per (context ids, continuation ids), on the scoring window."""

    @abstractmethod
    def token_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        """log P(token | the tokens before it) for each ``sequences[i][starts[i]:]``, from prompt logprobs."""

    @abstractmethod
    def sample_token_ids(
        self, prompt_ids: list[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[tuple[list[int], float]]:
        """``n`` seeded continuations of exactly ``max_tokens`` ids (EOS held back) and their joint log-probabilities."""

    # ------------------------------------------------------------------ relaxed perplexity
    def sample_continuations(
        self, prompt_ids: Sequence[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[Continuation]:
        # one seed per prompt, as the hf sampler's rows (vLLM's RNG differs from torch's anyway)
        seed = request_seeds(seed, [" ".join(map(str, prompt_ids))])[0]
        sampled = self.sample_token_ids(list(prompt_ids), n=n, max_tokens=max_tokens, top_p=top_p, seed=seed)
        return [Continuation(tuple(ids), logprob) for ids, logprob in sampled]

    def target_logprobs(
        self,
        prompt_ids: Sequence[int],
        continuations: Sequence[Sequence[int]],
        lengths: Sequence[int],
        targets: Sequence[Sequence[int]],
    ) -> list[dict[Prefix, PrefixedTarget]]:
        """One ``q + p + t`` prompt per distinct prefix and target, scored by its prompt log-probabilities."""
        q = list(prompt_ids)
        prefixes = [p for group in step_prefixes(continuations, lengths).values() for p in group]
        requests = [q + list(p) + list(t) for t in targets for p in prefixes]
        logprobs = self.token_logprobs(requests, [len(q)] * len(requests))
        results = []
        for k in range(len(targets)):
            values = logprobs[k * len(prefixes) : (k + 1) * len(prefixes)]  # tokens of p then t
            results.append(
                {p: PrefixedTarget(float(sum(v[: len(p)])), float(sum(v[len(p) :]))) for p, v in zip(prefixes, values)}
            )
        return results
