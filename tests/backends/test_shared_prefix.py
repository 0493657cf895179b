"""Shared-prefix scoring (hf/scoring.py, tokenization.shared_prefix_groups) against the plain path
(``shared_prefix=False``, one whole forward per request) and direct transformers forwards, in both of its
forms: packed (a context and its continuations in one forward under a 4D mask) and the two-forward form
(the context, then the continuations on its cache; models with a sliding window, or a mask too large)."""

from __future__ import annotations

import contextlib
import math

import pytest
import torch
from mcqa_rows import cloze, letters, questions

from careval.backends import load_backend
from careval.backends.hf import scoring
from careval.backends.hf.backend import HFBackend
from careval.backends.tokenization import encode_pair, shared_prefix_groups
from support.reference import direct_loglikelihood, lm_eval_pair
from support.specs import local_model_spec

SHARED = [  # one context, continuations of 1, 2, 4 and many tokens, plus other contexts
    ("The patient presented with", " chest"),
    ("The patient presented with", " chest pain"),
    ("The patient presented with", " shortness of breath."),
    ("The patient presented with", " chest pain and shortness of breath and heart failure."),
    ("The patient presented with", " pneumonia"),
    ("Blood pressure was ", "150/95 mmHg"),  # a group of one (trailing space moves to the continuation)
    ("", "Aspirin is contraindicated"),  # the empty context: [BOS]
    ("", "Café"),
    ("Question: What is the first-line treatment for hypertension? Answer:", " lifestyle changes."),
    ("Question: What is the first-line treatment for hypertension? Answer:", " metformin"),
]


PATHS = ["packed", "two forwards"]


def scores(backend, pairs, shared: bool) -> list[float]:
    backend.shared_prefix = shared
    try:
        return backend.loglikelihood(pairs)
    finally:
        backend.shared_prefix = True


@contextlib.contextmanager
def counted_forwards(model):
    """(batch, length, continues a cache) of every call of the model's forward inside the block."""
    calls: list[tuple[int, int, bool]] = []
    original = model.forward

    def forward(*args, **kwargs):
        given = kwargs.get("cache", kwargs.get("past_key_values"))
        calls.append((*kwargs["input_ids"].shape, given is not None))
        return original(*args, **kwargs)

    model.forward = forward
    try:
        yield calls
    finally:
        del model.forward  # back to the class's method


# ----------------------------------------------------------------------------- grouping
def test_groups_are_identical_untruncated_contexts_of_two_or_more():
    requests = [
        ([1, 2, 3], [4]),
        ([9], [8]),
        ([1, 2, 3], [5, 6]),
        ([1, 2], [3]),
        ([1, 2, 3], [7, 7, 7, 7, 7]),
        ([9], [8, 8]),
    ]
    # max_length 6: [1,2,3]+[7]*5 is 8 > 7 tokens, truncated from the left, so it is scored whole
    groups, rest = shared_prefix_groups(requests, max_length=6)
    assert groups == [[0, 2], [1, 5]]
    assert rest == [3, 4]
    groups, rest = shared_prefix_groups(requests, max_length=7)
    assert groups == [[0, 2, 4], [1, 5]] and rest == [3]


# ----------------------------------------------------------------------------- tiny model
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("padding", ["cpu", "gpu"])
@pytest.mark.parametrize("batch_size", [1, 2, 8])
def test_tiny_shared_equals_direct_forwards_and_the_plain_path(
    make_hf, tiny_model, tiny_tokenizer, batch_size, padding, path, monkeypatch
):
    if padding == "gpu":  # every batch of contexts padded, as on a GPU
        monkeypatch.setattr(scoring, "_CPU_PADDING", math.inf)
    backend = make_hf(batch_size=batch_size)  # batch 1 and 2: the 5-continuation group runs in several batches
    backend.packed = path == "packed"
    want = [direct_loglikelihood(tiny_model, *lm_eval_pair(tiny_tokenizer, c, x)) for c, x in SHARED]
    got = scores(backend, SHARED, shared=True)
    assert got == pytest.approx(want, abs=1e-4)
    assert got == pytest.approx(scores(backend, SHARED, shared=False), abs=1e-4)
    assert max(want) - min(want) > 1.0  # far apart: a wrong token or offset would show


@pytest.mark.parametrize("path", PATHS)
def test_tiny_group_runs_the_context_once(make_hf, path, monkeypatch):
    backend = make_hf(batch_size=8)
    assert backend.packed  # a Llama: full attention, sdpa
    if path == "two forwards":  # as for a batch whose mask would pass the budget
        monkeypatch.setattr(scoring, "_PACKED_MASK_ENTRIES", 0)
    ctx, _ = encode_pair(backend.tokenizer, SHARED[0][0], SHARED[0][1], add_bos=None)
    with counted_forwards(backend.model) as calls:
        got = backend.loglikelihood(SHARED[:5])
    conts = [encode_pair(backend.tokenizer, c, x, add_bos=None)[1] for c, x in SHARED[:5]]
    longer = [len(x) - 1 for x in conts if len(x) > 1]
    if path == "packed":  # one row: the context, then each continuation but its last token
        assert calls == [(1, len(ctx) + sum(longer), False)]
    else:  # the context once, then the continuations past their first token in one padded batch
        assert calls == [(1, len(ctx), False), (len(longer), max(longer), True)]
    assert got == pytest.approx(scores(backend, SHARED[:5], shared=False), abs=1e-4)


def test_contexts_longer_than_max_length_are_truncated_as_the_plain_path(make_hf, tiny_model, tiny_tokenizer):
    backend = make_hf(max_length=32, batch_size=4)
    context = "A 45-year-old woman with type 2 diabetes was started on"
    pairs = [
        (context, x)
        for x in (
            " metformin",
            " metformin 500 mg twice daily.",
            " aspirin",
            " metformin 500 mg twice daily and heart failure.",
        )
    ]
    encoded = [lm_eval_pair(tiny_tokenizer, c, x) for c, x in pairs]
    # the short continuations fit and share the context; the long ones are truncated, scored whole
    assert shared_prefix_groups(encoded, 32) == ([[0, 2]], [1, 3])
    want = []
    for ctx, cont in encoded:
        window = (ctx + cont)[-33:]
        want.append(direct_loglikelihood(tiny_model, window[: len(window) - len(cont)], cont))
    got = scores(backend, pairs, shared=True)
    assert got == pytest.approx(want, abs=1e-4)
    assert got == pytest.approx(scores(backend, pairs, shared=False), abs=1e-4)


@pytest.mark.parametrize("batch_size", [1, 8])
def test_letters_need_one_context_forward_per_batch_of_questions(make_hf, batch_size):
    backend = make_hf(batch_size=batch_size)
    items = [
        ("What lowers blood pressure?", ["Aspirin", "Lifestyle changes", "Metformin", "Rest"]),
        ("What causes chest pain?", ["Pneumonia", "Heart failure", "Embolism", "Diabetes"]),
    ]
    # the tiny tokenizer has no " A" token: one-token words stand in for the letters here
    # (test_smollm2_real_rows_float32 counts real " A".." D")
    pairs = [(c, {" A": " heart", " B": " with", " C": " the", " D": " and"}[x]) for c, x in letters(items)]
    assert all(len(encode_pair(backend.tokenizer, c, x, add_bos=None)[1]) == 1 for c, x in pairs)
    with counted_forwards(backend.model) as calls:
        got = backend.loglikelihood(pairs)
    assert [batch for batch, _, _ in calls] == ([1, 1] if batch_size == 1 else [2])
    assert not any(continues for _, _, continues in calls)  # no continuation forward
    assert got == pytest.approx(scores(backend, pairs, shared=False), abs=1e-4)


def test_a_model_without_a_dynamic_cache_falls_back_to_the_plain_path(make_hf):
    backend = make_hf(batch_size=4)
    backend.packed = False  # the two-forward form needs the context's cache
    original = backend.model.forward

    def forward(*args, **kwargs):  # as a model that keeps no (or another kind of) cache
        out = original(*args, **kwargs)
        out["cache"] = None
        return out

    want = scores(backend, SHARED, shared=False)
    backend.model.forward = forward
    try:
        got = backend.loglikelihood(SHARED)
        assert backend.shared_prefix is False  # given up for the rest of the backend's life
    finally:
        del backend.model.forward
    assert got == pytest.approx(want, abs=1e-4)


def test_shared_prefix_is_on_unless_the_backend_is_built_without_it(tiny_model_dir):
    assert load_backend(local_model_spec("t", tiny_model_dir, dtype="float32")).shared_prefix is True
    assert HFBackend.load("t", str(tiny_model_dir), dtype="float32", shared_prefix=False).shared_prefix is False


# ----------------------------------------------------------------------------- real models, real rows
@pytest.fixture(scope="module")
def smol(smollm2_dir):
    return HFBackend.load("smollm2", str(smollm2_dir), dtype="float32", batch_size=8, threads=1)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_smollm2_real_rows_float32(smol, shared_data, path, monkeypatch):
    medqa, medmcqa = questions(shared_data, "medqa", 4), questions(shared_data, "medmcqa", 4)
    pairs = cloze(medqa) + cloze(medmcqa) + letters(medqa[:2])
    monkeypatch.setattr(smol, "packed", path == "packed")
    with counted_forwards(smol.model) as calls:
        got = scores(smol, pairs, shared=True)
    # each of the 10 contexts runs once (in batches of <= 8; on CPU only similar lengths batch) ...
    conts = [encode_pair(smol.tokenizer, c, x, add_bos=None)[1] for c, x in pairs]
    assert sum(len(x) == 1 for x in conts[32:]) == 8  # " A".." D" are one token each
    contexts = [batch for batch, _, continues in calls if not continues]
    continued = [batch for batch, _, continues in calls if continues]
    assert sum(contexts) == 10 and max(contexts) <= 8
    if path == "packed":  # ... with its continuations in the same forward
        assert not continued
    else:  # ... and only the cloze options past their first token run again, on the cache
        assert sum(continued) == sum(len(x) > 1 for x in conts) and max(continued) <= 8
        assert len(continued) <= 8  # at most one per cloze question
    want = scores(smol, pairs, shared=False)
    assert got == pytest.approx(want, abs=1e-4)
    assert max(want) - min(want) > 5.0


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_smollm2_real_rows_float64(smollm2_dir, shared_data, path):
    backend = HFBackend.load("smollm2", str(smollm2_dir), dtype="float32", batch_size=8, threads=1)
    backend.model.to(torch.float64)
    backend.packed = path == "packed"
    pairs = cloze(questions(shared_data, "medqa", 2)) + letters(questions(shared_data, "medmcqa", 1))
    got = scores(backend, pairs, shared=True)
    assert got == pytest.approx(scores(backend, pairs, shared=False), abs=1e-9, rel=0)


@pytest.mark.slow
def test_gemma3_sliding_window_real_rows(gemma_dir, shared_data, monkeypatch):
    backend = HFBackend.load("gemma3", str(gemma_dir), dtype="float32", batch_size=8, threads=1)
    window = backend.config.sliding_window
    items = questions(shared_data, "medqa", 12)
    # a context just past the sliding window: the sliding layers keep only its last tokens in the cache
    for n in range(2, len(items)):
        pairs = cloze(items[:1]) + cloze([(" ".join(q for q, _ in items[1:n]), items[0][1])])
        ctx = encode_pair(backend.tokenizer, *pairs[-1], add_bos=None)[0]
        if len(ctx) > window + 16:
            break
    assert window + 16 < len(ctx) < backend.max_length, (len(ctx), window)
    assert not backend.packed  # one mask for every layer would ignore the window: the two-forward form
    with counted_forwards(backend.model) as calls:
        got = scores(backend, pairs, shared=True)
    # on CPU the two contexts run apart (left padding would be most of the short one) ...
    assert [(batch, continues) for batch, _, continues in calls] == [(1, False), (4, True), (1, False), (4, True)]
    assert calls[0][1] == len(ctx)
    want = scores(backend, pairs, shared=False)
    assert got == pytest.approx(want, abs=1e-4)
    # ... as on a GPU they share one forward, the short one left-padded past the window
    monkeypatch.setattr(scoring, "_CPU_PADDING", math.inf)
    with counted_forwards(backend.model) as calls:
        padded = scores(backend, pairs, shared=True)
    assert calls == [(2, len(ctx), False), (8, calls[1][1], True)]
    assert padded == pytest.approx(want, abs=1e-4)
    ctx0, cont0 = encode_pair(backend.tokenizer, *pairs[0], add_bos=None)
    assert ctx0[0] == backend.tokenizer.bos_token_id
    assert got[0] == pytest.approx(direct_loglikelihood(backend.model, ctx0, cont0), abs=1e-4)
