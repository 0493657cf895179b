"""Backend.greedy_flags against lm-eval's is_greedy (HFLM.loglikelihood's second value) on the tiny model, on each
of the hf backend's scoring paths (the flags come from the log-likelihoods' passes: careval.backends.hf.scoring)."""

from __future__ import annotations

import math

import pytest
import torch

from careval.backends import load_backend
from careval.backends.base import Backend
from careval.backends.tokenization import encode_pair
from support.specs import local_model_spec

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

CONTEXTS = [
    "The patient presented with",
    "Blood pressure was",
    "Question: What is the first-line treatment",
    "Aspirin is contraindicated in",
    "A 45-year-old woman with type 2 diabetes",
    "The differential diagnosis includes",
]


def _greedy_continuations(backend, n_tokens: int = 2) -> list[tuple[str, str]]:
    """(context, the model's greedy continuation of it) where that text tokenises back into the greedy tokens."""
    pairs = []
    for context in CONTEXTS:
        ids = backend.tokenizer.encode(context)
        new = []
        with torch.inference_mode():
            for _ in range(n_tokens):
                new.append(int(backend.model(input_ids=torch.tensor([ids + new])).logits[0, -1].argmax()))
        continuation = backend.tokenizer.decode(new)
        if encode_pair(backend.tokenizer, context, continuation, add_bos=backend.add_bos)[1] == new:
            pairs.append((context, continuation))
    return pairs


# a shared context and its continuations in one forward, in two forwards (the context's cache, then the
# continuations), and each request whole (the plain path, lm-eval's own)
PATHS = ["packed", "two forwards", "plain"]


@pytest.mark.parametrize("path", PATHS)
def test_greedy_flags_are_lm_evals_is_greedy(tiny_model_dir, path):
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    ours = load_backend(local_model_spec("tiny", tiny_model_dir, dtype="float32", batch_size=2))
    assert ours.shared_prefix and ours.packed  # the defaults for a Llama on CPU
    ours.packed = path == "packed"
    ours.shared_prefix = path != "plain"
    greedy = _greedy_continuations(ours)
    assert len(greedy) >= 2
    # each context's own greedy continuation (is_greedy), and another context's (is not): two requests a context
    pairs = greedy + [(context, other) for (context, _), (_, other) in zip(greedy, greedy[1:] + greedy[:1])]
    theirs = HFLM(pretrained=str(tiny_model_dir), backend="causal", device="cpu", dtype="float32", batch_size=2)
    requests = [Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i) for i, p in enumerate(pairs)]
    want = [float(is_greedy) for _, is_greedy in theirs.loglikelihood(requests)]
    assert ours.greedy_flags(pairs) == want
    assert want[: len(greedy)] == [1.0] * len(greedy) and 0.0 in want


def test_a_backend_that_cannot_say_answers_nan():
    class Remote(Backend):
        backend = "remote"

        def generate(self, prompts, sampling, instruction=None):
            return [""] * len(prompts)

    assert all(math.isnan(flag) for flag in Remote().greedy_flags([("a", " b")]))
