"""The one interface every model runtime implements (transformers, vLLM, an OpenAI-compatible server, ...).

A caller (inference, the judge, Relaxed Perplexity, the rephraser, the CareQA steps) sees a :class:`Backend`
and nothing else: it asks the backend's declared :class:`Capabilities` what it can do, never its class or its
private attributes (tests/test_import_graph.py holds every caller to that). What a caller uses:

* ``format(prompt, instruction)``: the text a prompt becomes for this model (system prompt, the task's
  instruction, chat template); ``request_pair(context, continuation, instruction)``: a log-likelihood request as
  the model is sent it (its context formatted, its continuation as a chat template wants it);
  ``prompt_tokens(prompt, room, instruction)``: those as token ids for generation; ``encode(text)``: a continuation's
  ids.
* ``generate``, ``loglikelihood``, ``loglikelihood_rolling``: lm-eval's three requests.
* ``sample_continuations`` and ``target_logprobs``: the token-level pair Relaxed Perplexity is written over
  (careval.metrics.relaxed_perplexity): sampled continuations of a prompt, then the log-probability of each
  target after each prefix of them.
* ``name``, ``max_length``, ``gpus``, ``capabilities``, ``last_usage`` (each request's tokens); ``close()``.

A backend registers itself by name (careval.backends.registry) and is built from the typed model spec.
:class:`Backend` answers for a runtime without a capability: a one-line :class:`CapabilityError`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .chat import TARGET_DELIMITER

Prefix = tuple[int, ...]


@dataclass(frozen=True)
class Sampling:
    """Decoding settings shared by every backend; greedy by default (temperature 0).

    temperature == 0 means greedy decoding (top_p and seed are then ignored).
    temperature > 0 samples; ``seed`` makes a call reproducible: the same prompts with the
    same Sampling give the same texts on every rerun of the same backend and model.
    ``stop``: the completion is cut before the first occurrence of any of these strings.
    """

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 1234
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A list (e.g. straight from YAML) would make the frozen dataclass unhashable.
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.max_new_tokens < 1:
            raise ValueError(f"Sampling.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"Sampling.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"Sampling.top_p must be in (0, 1], got {self.top_p}")
        if any(not s for s in self.stop):
            raise ValueError("Sampling.stop must not contain empty strings")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Capabilities:
    """What a runtime can do, declared once where it registers (careval.backends.registry), read at plan time.

    ``prompt_logprobs``: the log-probability of given text (loglikelihood, loglikelihood_rolling,
    target_logprobs; MCQA, perplexity, Relaxed Perplexity and the judge's score distribution need it).
    ``top_logprobs``: the most likely next tokens with their log-probabilities at each generated step.
    ``chat_template``: it wraps prompts in the model's own chat template (a server applies its own).
    ``max_gpus``: the most GPUs one model of it runs on (None: as many as the spec gives).
    """

    prompt_logprobs: bool
    top_logprobs: bool
    chat_template: bool
    max_gpus: int | None


# The capability -> how a message names it.
CAPABILITY_NAMES = {
    "prompt_logprobs": "prompt log-probabilities",
    "top_logprobs": "top-k log-probabilities",
    "chat_template": "chat template of its own",
}


class CapabilityError(RuntimeError):
    """A request a backend cannot answer, in one line ("backend openai has no prompt log-probabilities")."""

    one_line = True  # careval.joblog: the message alone on the console, no traceback


def missing(backend: str, capability: str, needed_by: str = "") -> CapabilityError:
    """The one line for a capability `backend` lacks (and who needs it)."""
    needs = f": {needed_by} needs them" if needed_by else ""
    return CapabilityError(f"backend {backend} has no {CAPABILITY_NAMES[capability]}{needs}")


class Continuation(NamedTuple):
    """A sampled continuation: its token ids and its joint log-probability under the model (unmodified by top-p)."""

    token_ids: Prefix
    logprob: float


class Usage(NamedTuple):
    """The tokens one request read (its prompt, or its scored context and continuation) and generated, and the tokens
    cut from the left of a context longer than the model's window (lm-eval's rule: the end is kept); `prompt` counts
    the tokens read after the cut."""

    prompt: int
    generated: int
    cut: int = 0


class TopStep(NamedTuple):
    """One generated token (its text) and the most likely tokens at its step, by text, with their log-probabilities
    (what an API's top_logprobs give: the judge's score distribution where there are no prompt log-probabilities)."""

    token: str
    top: dict[str, float]


class PrefixedTarget(NamedTuple):
    """log P(prefix | prompt) and log P(target | prompt + prefix), natural logs summed over the tokens."""

    prefix: float
    target: float


def step_prefixes(continuations: Sequence[Sequence[int]], steps: Sequence[int]) -> dict[int, list[Prefix]]:
    """The distinct prefixes c[:n] at each stride point, in first-seen order; unreached points are left out."""
    out: dict[int, list[Prefix]] = {}
    for n in steps:
        seen: dict[Prefix, None] = {}
        for c in continuations:
            if len(c) >= n:
                seen.setdefault(tuple(c[:n]), None)
        if seen:
            out[n] = list(seen)
    return out


class Backend(ABC):
    """The interface (see the module docstring), with what a runtime lacking a capability answers.

    A runtime implements ``generate``; with ``prompt_logprobs`` also ``encode`` and the log-probability
    methods, else those raise :class:`CapabilityError`. ``format`` is the prompt itself where the runtime
    applies no template of its own (a server applies its own).
    """

    capabilities: Capabilities  # declared where it registers (a class attribute of each runtime's class)
    backend: str  # the name it is registered under (careval.backends.registry)
    name: str  # the model's name (its config key)
    max_length: int  # the context window, in tokens
    # the tokens of each request of the last generate or log-likelihood call, where the runtime counts them (the
    # outputs record them, careval.inference; the request cache keeps them with the entry)
    last_usage: Sequence[Usage] = ()
    # each request's status in the last call where one failed (a served model's reply still malformed after its
    # retries: "malformed_reply"; its value is then empty or NaN, and the call is not kept in the request cache); ()
    # where every request was answered
    last_status: Sequence[str] = ()
    # how many requests of the last call the runtime read from a request cache of its own (a served model's, which
    # keeps each request as it arrives), and the tokens it paid for (None: all of last_usage): careval.backends.cached
    last_reused: int = 0
    last_paid: Sequence[Usage] | None = None
    # this model's prompts are wrapped in its chat template (its spec's `chat_template`; false where the runtime applies
    # none of its own, a chat API's server applies its own)
    chat_template: bool = False

    @property
    def gpus(self) -> int:
        """The GPUs this model runs on."""
        return 0

    def format(self, prompt: str, instruction: str | None = None) -> str:
        """The text `prompt` becomes for this model (its system prompt and chat template applied). `instruction`:
        the task's (lm-eval's `description`), which precedes the prompt: under a chat template in the system turn,
        after the system prompt (careval.backends.chat.format_prompt), else as text."""
        return (instruction or "") + prompt

    def request_pair(self, context: str, continuation: str, instruction: str | None = None) -> tuple[str, str]:
        """A conditional request (for ``loglikelihood`` or ``greedy_flags``) as this model is sent it. `context`, a
        prompt the task built, less its `instruction` (the task's, apart as for ``generate``), becomes what ``format``
        makes of a prompt (the system prompt, the instruction, the chat template: lm-eval's --apply_chat_template
        wraps a multiple-choice context too); under a chat template the continuation loses lm-eval's target delimiter
        (careval.backends.chat.TARGET_DELIMITER), as lm-eval's construct_requests drops it."""
        if self.chat_template:
            continuation = continuation.removeprefix(TARGET_DELIMITER)
        return self.format(context, instruction or None), continuation

    def encode(self, text: str) -> list[int]:
        """The token ids of `text` as a continuation of running text (no special tokens)."""
        raise CapabilityError(f"backend {self.backend} gives no token ids (a served model's tokenizer is the server's)")

    def prompt_tokens(self, prompt: str, room: int, instruction: str | None = None) -> tuple[list[int], int]:
        """The token ids `prompt` is generated from (formatted with `instruction`, its special tokens, left-truncated
        to the last `room` ids) and how many ids it had before that."""
        ids = self.encode(self.format(prompt, instruction))
        if room < 1:
            raise ValueError(f"no room for the prompt: the context window leaves {room} tokens")
        return ids[-room:], len(ids)

    @abstractmethod
    def generate(self, prompts: list[str], sampling: Sampling, instruction: str | None = None) -> list[str]:
        """One completion per prompt (text only, prompt stripped); `instruction`: the task's, before every prompt
        (as ``format`` puts it: the system turn under a chat template)."""

    def loglikelihood(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Natural-log sum over the continuation's tokens given the context, per (context, continuation)."""
        raise missing(self.backend, "prompt_logprobs", "a log-likelihood request")

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        """Natural-log likelihood of each whole text (lm-eval's rolling windows, BOS as the first context)."""
        raise missing(self.backend, "prompt_logprobs", "a rolling log-likelihood request")

    def generate_top_logprobs(
        self, prompts: list[str], sampling: Sampling, top: int, instruction: str | None = None
    ) -> list[tuple[str, list[TopStep]]]:
        """As ``generate``, with each generated token's `top` most likely alternatives (TopStep) where the runtime
        returns them (an empty list where a reply had none)."""
        raise missing(self.backend, "top_logprobs", "the judge's score distribution")

    def greedy_flags(self, pairs: list[tuple[str, str]]) -> list[float]:
        """lm-eval's is_greedy of each (context, continuation): 1.0 where every continuation token is the model's
        most likely next token given what precedes it, 0.0 where not (what lm-eval's loglikelihood `acc` reads);
        NaN where the runtime cannot say (the metrics that read it are then counted as not scored)."""
        return [math.nan] * len(pairs)

    def sample_continuations(
        self, prompt_ids: Sequence[int], *, n: int, max_tokens: int, top_p: float, seed: int
    ) -> list[Continuation]:
        """`n` continuations of exactly `max_tokens` tokens (end-of-sequence held back) drawn at temperature 1
        with nucleus `top_p`, seeded by (`seed`, the prompt), each with its joint log-probability."""
        raise missing(self.backend, "prompt_logprobs", "sampling with log-probabilities")

    def target_logprobs(
        self,
        prompt_ids: Sequence[int],
        continuations: Sequence[Sequence[int]],
        lengths: Sequence[int],
        targets: Sequence[Sequence[int]],
    ) -> list[dict[Prefix, PrefixedTarget]]:
        """Per target, for every distinct prefix ``p = c[:n]`` of the continuations (n in `lengths`,
        :func:`step_prefixes`): log P(p | prompt) and log P(target | prompt + p)."""
        raise missing(self.backend, "prompt_logprobs", "target log-probabilities")

    def close(self) -> None:
        """Free what the runtime holds (an engine, an accelerator); the backend is unusable after."""
        return None  # most runtimes hold nothing their process's end does not free
