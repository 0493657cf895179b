"""Tokenisation rules shared by every backend, so that hf and vLLM score the very same token ids.

The rules follow lm-evaluation-harness's HFLM / TemplateLM as of lm-eval 0.4.13:

* special tokens (``add_bos``): ``None`` (default) = the tokenizer's own default
  (``tokenizer.encode(text)``), so BOS is added exactly when the tokenizer is set up to add
  it (Llama-2/3, Gemma, Mistral: yes; SmolLM2, Qwen, GPT-2: no). ``True``/``False`` force
  ``add_special_tokens``. Either way, a text that already starts with the BOS text (or the
  prefix token's text) is encoded without special tokens, so a chat template's own
  ``<bos>`` is not doubled. (lm-eval <= 0.4.9 instead defaulted to False and forced True
  for Gemma only; ``add_bos_token: false`` reproduces that for non-Gemma models.)
* (context, continuation) pairs: trailing whitespace of the context moves onto the
  continuation; ``whole = enc(context + continuation)``, ``ctx = enc(context)``,
  ``cont = whole[len(ctx):]``. An empty context: the continuation is encoded without
  special tokens and the prefix token (BOS, else EOS) is the context -- or, if the
  continuation already starts with it, its first token is (:func:`encode_pair`).
* scoring window: ``(ctx + cont)[-(max_length + 1):]``; the model sees all but the last
  token, and the last ``len(cont)`` tokens are scored (:func:`scoring_window`).
* shared prefix: requests with the same context ids whose window is not truncated are
  scored from one forward of the context (:func:`shared_prefix_groups`); their token
  splits are the ones above, so the scores are the same up to float rounding.
* rolling log-likelihood: lm-eval's ``get_rolling_token_windows`` with ``context_len=1``
  followed by ``make_disjoint_window`` (reimplemented below), prefix token = BOS else EOS.
  One deliberate difference: when the tokenizer itself puts the prefix token at the start
  of the text's ids, that token is dropped before windowing -- the prefix token already
  stands for it, and lm-eval 0.4.13 would otherwise add a meaningless log p(BOS | BOS).
  So ``loglikelihood_rolling(text) == loglikelihood(("", text))`` whenever the text fits.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from .chat import format_prompt

# transformers' "no limit" sentinel for tokenizer.model_max_length
_TOKENIZER_INFINITY = 1000000000000000019884624838656
DEFAULT_MAX_LENGTH = 2048


# ---------------------------------------------------------------------------------------
# special tokens and lengths
# ---------------------------------------------------------------------------------------
def prefix_token_id(tokenizer: Any) -> int:
    """The token that stands for an empty context: BOS if the tokenizer has one, else EOS."""
    if tokenizer.bos_token_id is not None:
        return int(tokenizer.bos_token_id)
    if tokenizer.eos_token_id is not None:
        return int(tokenizer.eos_token_id)
    raise ValueError("tokenizer has neither a BOS nor an EOS token to use as the empty context")


def pad_token_id(tokenizer: Any) -> int:
    """lm-eval's choice of padding token: pad, else unk, else eos (padding is always masked or dropped)."""
    for tid in (tokenizer.pad_token_id, getattr(tokenizer, "unk_token_id", None), tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def resolve_max_length(config: Any, tokenizer: Any, override: int | None = None) -> int:
    """Context window: the explicit value, else the model config (n_positions,
    max_position_embeddings, n_ctx), else tokenizer.model_max_length, else 2048 (as lm-eval)."""
    if override:
        if int(override) < 2:
            raise ValueError(f"max_length must be >= 2, got {override}")
        return int(override)
    # multimodal / nested configs keep the language model's settings in text_config
    configs = [config, getattr(config, "text_config", None)]
    for cfg in configs:
        if cfg is None:
            continue
        for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
            value = getattr(cfg, attr, None)
            if isinstance(value, int) and value > 0:
                return value
    model_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(model_max, int) and 0 < model_max < _TOKENIZER_INFINITY:
        return model_max
    return DEFAULT_MAX_LENGTH


# ---------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------
def _starts_with_bos(tokenizer: Any, text: str) -> bool:
    marks = {tokenizer.bos_token}
    try:
        marks.add(tokenizer.decode([prefix_token_id(tokenizer)]))
    except ValueError:
        pass
    return any(m and text.startswith(m) for m in marks)


def encode(tokenizer: Any, text: str, add_bos: bool | None) -> list[int]:
    """lm-eval's tok_encode: the tokenizer's default special tokens unless ``add_bos`` is
    set, and none at all when the text already starts with the BOS text."""
    kwargs = {} if add_bos is None else {"add_special_tokens": bool(add_bos)}
    if _starts_with_bos(tokenizer, text):
        kwargs = {"add_special_tokens": False}
    return list(tokenizer.encode(text, **kwargs))


def encode_pair(
    tokenizer: Any,
    context: str,
    continuation: str,
    *,
    add_bos: bool | None,
) -> tuple[list[int], list[int]]:
    """Token ids of (context, continuation), as lm-eval's TemplateLM.loglikelihood."""
    if context == "":
        cont = list(tokenizer.encode(continuation, add_special_tokens=False))
        prefix = prefix_token_id(tokenizer)
        if cont and cont[0] == prefix:
            return cont[:1], cont[1:]
        return [prefix], cont
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = encode(tokenizer, context + continuation, add_bos)
    ctx = encode(tokenizer, context, add_bos)
    return ctx, whole[len(ctx) :]


def rolling_tokens(tokenizer: Any, text: str, add_bos: bool | None) -> list[int]:
    """The ids a rolling log-likelihood predicts: the text's, minus a leading prefix token
    (see the module docstring)."""
    tokens = encode(tokenizer, text, add_bos)
    if tokens and tokens[0] == prefix_token_id(tokenizer):
        tokens = tokens[1:]
    return tokens


def scoring_window(ctx: Sequence[int], cont: Sequence[int], max_length: int) -> tuple[list[int], int]:
    """The tokens to score and how many of the last ones belong to the continuation.

    Truncated from the left to ``max_length + 1`` tokens: a causal model sees the first
    ``len(tokens) - 1`` (<= max_length) of them and predicts the last ``n_cont``.
    """
    n_cont = len(cont)
    if n_cont == 0:
        raise ValueError("continuation encodes to zero tokens (empty continuation?); lm-eval rejects it too")
    if n_cont > max_length:
        raise ValueError(f"continuation is {n_cont} tokens, longer than the context window ({max_length})")
    if len(ctx) == 0:
        raise ValueError("context encodes to zero tokens; use '' to score from the BOS/EOS token")
    tokens = (list(ctx) + list(cont))[-(max_length + 1) :]
    return tokens, n_cont


def shared_prefix_groups(
    requests: Sequence[tuple[Sequence[int], Sequence[int]]], max_length: int
) -> tuple[list[list[int]], list[int]]:
    """Indices of the requests that can share one context forward, and of the rest.

    A group is >= 2 requests with identical context ids whose window is not truncated
    (``len(ctx) + len(cont) <= max_length + 1``): only then is the model input the whole
    context followed by the continuation, so the context's keys/values are the same for
    every member. Truncated requests (their window starts at a continuation-dependent
    token) and lone contexts go to the rest, scored whole as before. Groups in order of
    first occurrence, members in input order.
    """
    by_context: dict[tuple[int, ...], list[int]] = {}
    rest: list[int] = []
    for i, (ctx, cont) in enumerate(requests):
        if len(ctx) > 0 and len(cont) > 0 and len(ctx) + len(cont) <= max_length + 1:
            by_context.setdefault(tuple(ctx), []).append(i)
        else:
            rest.append(i)
    groups = []
    for members in by_context.values():
        if len(members) > 1:
            groups.append(members)
        else:
            rest.extend(members)
    return groups, sorted(rest)


def generation_tokens(
    tokenizer: Any, prompt: str, *, add_bos: bool | None, max_prompt_tokens: int
) -> tuple[list[int], int]:
    """Prompt ids for generation, left-truncated to ``max_prompt_tokens`` (lm-eval keeps the
    end), and the untruncated length. Same special-token rule as :func:`encode`: a
    chat-formatted prompt that starts with ``<bos>`` / ``<|begin_of_text|>`` gets no second one.
    """
    ids = encode(tokenizer, prompt, add_bos) or [prefix_token_id(tokenizer)]
    if max_prompt_tokens < 1:
        raise ValueError(
            f"no room for the prompt: max_new_tokens leaves {max_prompt_tokens} tokens of the context window"
        )
    return ids[-max_prompt_tokens:], len(ids)


# ---------------------------------------------------------------------------------------
# rolling windows (lm-eval's utils.get_rolling_token_windows / make_disjoint_window)
# ---------------------------------------------------------------------------------------
def get_rolling_token_windows(
    token_list: Sequence[int], prefix_token: int, max_seq_len: int, context_len: int
) -> Iterator[tuple[list[int], list[int]]]:
    """Split ``token_list`` into (input, targets) windows covering every token exactly once.

    The first window predicts the first ``min(max_seq_len, n)`` tokens from the prefix token
    onwards. Each later window is a full ``max_seq_len``-token input ending just before its
    last target, and predicts the next at most ``max_seq_len - context_len + 1`` tokens,
    so each prediction sees at least ``context_len`` tokens of context.
    """
    if not 1 <= context_len <= max_seq_len:
        raise ValueError(f"need 1 <= context_len ({context_len}) <= max_seq_len ({max_seq_len})")
    tokens = list(token_list)
    n = len(tokens)
    if n == 0:
        return
    step = max_seq_len - context_len + 1  # targets per later window
    first = min(max_seq_len, n)
    yield [prefix_token] + tokens[: first - 1], tokens[:first]
    done = first
    while done < n:
        count = min(n - done, step)
        end = done + count
        yield tokens[end - max_seq_len - 1 : end - 1], tokens[end - count : end]
        done = end


def make_disjoint_window(window: tuple[Sequence[int], Sequence[int]]) -> tuple[list[int], list[int]]:
    """Turn an (input, targets) window into a (context, continuation) pair that does not overlap:
    the input keeps only the tokens before the first target."""
    inputs, targets = window
    keep = len(inputs) - (len(targets) - 1)
    return list(inputs[:keep]), list(targets)


def rolling_pairs(tokens: Sequence[int], prefix_token: int, max_length: int) -> list[tuple[list[int], list[int]]]:
    """(context, continuation) token pairs whose scores sum to the text's log-likelihood."""
    return [
        make_disjoint_window(w)
        for w in get_rolling_token_windows(tokens, prefix_token, max_seq_len=max_length, context_len=1)
    ]


# ---------------------------------------------------------------------------------------
# sampling helpers
# ---------------------------------------------------------------------------------------
def request_seeds(seed: int, prompts: Sequence[str]) -> list[int]:
    """One seed per prompt from (call seed, prompt text, how many identical prompts came before).

    Tying the random stream to the prompt (not to its batch or position) makes a sampled
    completion independent of batch size and of the order and company of the prompts;
    repeated prompts still get different samples.
    """
    seen: dict[str, int] = {}
    seeds = []
    for prompt in prompts:
        k = seen.get(prompt, 0)
        seen[prompt] = k + 1
        digest = hashlib.sha256(f"{seed}\x00{k}\x00{prompt}".encode()).digest()
        seeds.append(int.from_bytes(digest[:8], "little") % (2**31 - 1))
    return seeds


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    """Cut ``text`` before the earliest occurrence of any stop string."""
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if i != -1:
            cut = min(cut, i)
    return text[:cut]


# ---------------------------------------------------------------------------------------
# a backend's prompts
# ---------------------------------------------------------------------------------------
class TokenizerRequests(ABC):
    """What a backend that tokenizes with a transformers tokenizer (hf, vllm) does by the rules above: Backend's
    ``format``, ``encode`` and ``prompt_tokens``, and its log-likelihood requests over its own ``score_tokens``
    (log P(continuation | context) per pair of token-id lists, on the scoring window)."""

    name: str
    tokenizer: Any
    chat_template: bool
    system_prompt: str | None
    add_bos: bool | None
    prefix_id: int
    max_length: int
    last_usage: Sequence[Any]
    # per request of the last call: the tokens cut from the left of its context to fit the window (the request
    # cache adds them to each request's Usage: careval.backends.cached)
    last_cut: list[int]

    @abstractmethod
    def score_tokens(self, requests: list[tuple[list[int], list[int]]]) -> list[float]:
        """log P(continuation | context) per pair of token-id lists: each backend built on this (hf, the vLLM ones)."""

    def format(self, prompt: str, instruction: str | None = None) -> str:
        return format_prompt(self.tokenizer, prompt, self.chat_template, self.system_prompt, instruction)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def prompt_tokens(self, prompt: str, room: int, instruction: str | None = None) -> tuple[list[int], int]:
        text = self.format(prompt, instruction)
        return generation_tokens(self.tokenizer, text, add_bos=self.add_bos, max_prompt_tokens=room)

    def generation_ids(self, texts: Sequence[str], room: int) -> list[list[int]]:
        """The ids each formatted prompt is generated from, left-truncated to `room`, and (`last_cut`) the tokens cut
        from each: the job counts them and says so in one line (careval.backends.cached), not one per prompt."""
        ids, cut = [], []
        for text in texts:
            kept, n = generation_tokens(self.tokenizer, text, add_bos=self.add_bos, max_prompt_tokens=room)
            ids.append(kept)
            cut.append(n - len(kept))
        self.last_cut = cut
        return ids

    def loglikelihood(self, pairs: list[tuple[str, str]]) -> list[float]:
        requests = [encode_pair(self.tokenizer, c, x, add_bos=self.add_bos) for c, x in pairs]
        scores = self.score_tokens(requests)
        # the tokens scored: the window (scoring_window) of a request longer than the model's, its left cut off
        window = self.max_length + 1
        self.last_usage = [(min(len(c) + len(x), window), 0) for c, x in requests]
        self.last_cut = [max(0, len(c) + len(x) - window) for c, x in requests]
        return scores

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        windows: list[tuple[list[int], list[int]]] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            for pair in rolling_pairs(
                rolling_tokens(self.tokenizer, text, self.add_bos), self.prefix_id, self.max_length
            ):
                windows.append(pair)
                owner.append(i)
        totals, tokens = [0.0] * len(texts), [0] * len(texts)
        for i, score, (context, continuation) in zip(owner, self.score_tokens(windows), windows):
            totals[i] += score  # windows in text order, as lm-eval sums them
            tokens[i] += len(context) + len(continuation)
        self.last_usage = [(n, 0) for n in tokens]
        self.last_cut = [0] * len(texts)  # rolling windows cover the whole text: nothing cut
        return totals
