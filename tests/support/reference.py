"""Reference computations for the backend and GPU tests, written directly against transformers
(no careval code), so the tests compare the backends with an independent implementation."""

from __future__ import annotations

import math

import torch


@torch.inference_mode()
def token_logprobs(model, ids: list[int]) -> list[float]:
    """log p(ids[j] | ids[:j]) for j = 1 .. len(ids)-1, from one unpadded forward pass."""
    logits = model(torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[j - 1, ids[j]]) for j in range(1, len(ids))]


def direct_loglikelihood(model, ctx_ids: list[int], cont_ids: list[int]) -> float:
    """Sum of the continuation's token log-probs given the context (log_softmax + gather)."""
    ids = list(ctx_ids) + list(cont_ids)
    with torch.inference_mode():
        logits = model(torch.tensor([ids])).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        positions = torch.arange(len(ctx_ids) - 1, len(ids) - 1)
        targets = torch.tensor(ids[len(ctx_ids) :])
        return float(logp[positions].gather(-1, targets[:, None]).sum())


def lm_eval_pair(tokenizer, context: str, continuation: str, **special) -> tuple[list[int], list[int]]:
    """lm-eval 0.4.13's encoding of a pair for a causal model (tokenizer-default special
    tokens unless ``add_special_tokens`` is given), written out in the test."""
    if context == "":
        return [tokenizer.bos_token_id], tokenizer.encode(continuation, add_special_tokens=False)
    stripped = context.rstrip()
    continuation = context[len(stripped) :] + continuation
    whole = tokenizer.encode(stripped + continuation, **special)
    ctx = tokenizer.encode(stripped, **special)
    return ctx, whole[len(ctx) :]


@torch.inference_mode()
def manual_greedy(model, ids: list[int], max_new_tokens: int, eos_ids: set[int]) -> list[int]:
    """Greedy decoding by hand: full forward pass, argmax of the last position, no cache."""
    ids = list(ids)
    new: list[int] = []
    for _ in range(max_new_tokens):
        logits = model(torch.tensor([ids])).logits[0, -1]
        nxt = int(torch.argmax(logits))
        if nxt in eos_ids:
            break
        new.append(nxt)
        ids.append(nxt)
    return new


@torch.inference_mode()
def relaxed_terms(model, q: list[int], t: list[int], kept, steps, skewed: bool) -> list[float]:
    """Relaxed Perplexity's log P(A_n | B_n) at each stride point some kept continuation reaches, by its definition:
    the distinct prefixes c[:n], one plain forward of q + p + t each, log P(t | q + p) (times P(p | q) unskewed)
    summed over the prefixes. Float64 log-softmax; no cache, no mask, no careval code."""
    terms = []
    for n in steps:
        prefixes = list(dict.fromkeys(tuple(c[:n]) for c in kept if len(c) >= n))
        if not prefixes:
            continue
        values = []
        for p in prefixes:
            ids = list(q) + list(p) + list(t)
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
            per_token = [float(logp[j - 1, ids[j]]) for j in range(len(q), len(ids))]
            values.append(sum(per_token[len(p) :]) + (0.0 if skewed else sum(per_token[: len(p)])))
        top = max(values)
        terms.append(top + math.log(sum(math.exp(v - top) for v in values)))
    return terms
