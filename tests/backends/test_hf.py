"""HFBackend on the tiny random Llama, checked against direct transformers computations."""

from __future__ import annotations

import math
import random

import pytest
import torch

from careval.backends import Sampling
from careval.backends.chat import ChatTemplateError
from support.reference import direct_loglikelihood, lm_eval_pair, manual_greedy, token_logprobs

PAIRS = [
    ("The patient presented with", " chest pain"),
    ("Question: What is the first-line treatment for hypertension? Answer:", " lifestyle changes."),
    ("Blood pressure was", " 150/95 mmHg; heart rate 88 beats per minute."),
    ("A", " 45-year-old woman"),
    ("Aspirin is contraindicated in patients with active bleeding.", "\n"),
    ("Café, naïve,", " résumé"),
]
TEXT = " ".join(
    [
        "A 45-year-old woman with type 2 diabetes was started on metformin 500 mg twice daily.",
        "The differential diagnosis includes pneumonia, pulmonary embolism and heart failure.",
    ]
)
PROMPTS = ["The patient presented with", "Blood pressure was 150/95", "Question: What is", "A"]


@pytest.fixture(scope="module")
def hf(make_hf):
    return make_hf(batch_size=1)


def reference_scores(model, tokenizer, pairs):
    return [direct_loglikelihood(model, *lm_eval_pair(tokenizer, c, x)) for c, x in pairs]


# ----------------------------------------------------------------------------- loglikelihood
def test_loglikelihood_equals_a_direct_forward_pass(hf, tiny_model, tiny_tokenizer):
    got = hf.loglikelihood(PAIRS)
    want = reference_scores(tiny_model, tiny_tokenizer, PAIRS)
    assert got == pytest.approx(want, abs=1e-4)
    assert all(s < 0 for s in got)
    # the scores are far apart: a wrong token, offset or context would not stay within 1e-4
    assert max(want) - min(want) > 1.0


def test_add_bos_token_false_scores_without_special_tokens(make_hf, tiny_model, tiny_tokenizer):
    got = make_hf(add_bos_token=False, batch_size=2).loglikelihood(PAIRS)
    want = [
        direct_loglikelihood(tiny_model, *lm_eval_pair(tiny_tokenizer, c, x, add_special_tokens=False))
        for c, x in PAIRS
    ]
    assert got == pytest.approx(want, abs=1e-4)
    default = [direct_loglikelihood(tiny_model, *lm_eval_pair(tiny_tokenizer, c, x)) for c, x in PAIRS]
    assert max(abs(a - b) for a, b in zip(got, default)) > 1e-2  # BOS does matter


@pytest.mark.parametrize("batch_size", [2, 3, 16])
def test_batching_and_padding_do_not_change_loglikelihoods(hf, make_hf, batch_size):
    one = hf.loglikelihood(PAIRS)
    batched = make_hf(batch_size=batch_size).loglikelihood(PAIRS)
    assert batched == pytest.approx(one, abs=1e-4)


def test_results_come_back_in_input_order(make_hf):
    backend = make_hf(batch_size=4)
    rng = random.Random(0)
    shuffled = PAIRS[:]
    rng.shuffle(shuffled)
    by_pair = dict(zip(PAIRS, backend.loglikelihood(PAIRS)))
    assert backend.loglikelihood(shuffled) == pytest.approx([by_pair[p] for p in shuffled], abs=1e-5)


@pytest.mark.parametrize("batch_size", [1, 4])
def test_continuations_after_one_context_share_one_forward(make_hf, tiny_model, tiny_tokenizer, batch_size):
    # the judge's case: five one-token scores after the same text, each equal to its own forward pass
    backend = make_hf(batch_size=batch_size)
    context = "Feedback: the answer names the right drug. [RESULT] "
    pairs = [(context, str(s)) for s in range(1, 6)] + PAIRS[:2]
    calls = []
    hook = backend.model.register_forward_hook(lambda module, args, kwargs_out: calls.append(1))
    try:
        got = backend.loglikelihood(pairs)
    finally:
        hook.remove()
    want = reference_scores(tiny_model, tiny_tokenizer, pairs)
    assert got == pytest.approx(want, abs=1e-4)
    assert len({round(g, 3) for g in got[:5]}) == 5  # five different targets, not one value copied
    # the five share the context's one forward (shared-prefix scoring): one-token continuations are read
    # from its last position, and longer ones (this toy tokenizer writes " 1" as a space and a digit) run in
    # the same forward after it (packed); in the two-forward form (a sliding-window model) they run on its
    # cached keys/values in batches. The two other pairs run whole (plain path).
    assert backend.packed
    calls.clear()
    hook = backend.model.register_forward_hook(lambda module, args, kwargs_out: calls.append(1))
    try:
        backend.loglikelihood(pairs[:5])
    finally:
        hook.remove()
    multi = sum(len(lm_eval_pair(tiny_tokenizer, c, x)[1]) > 1 for c, x in pairs[:5])
    assert 0 < multi < 5
    assert len(calls) == 1
    backend.packed = False
    calls.clear()
    hook = backend.model.register_forward_hook(lambda module, args, kwargs_out: calls.append(1))
    try:
        two_forwards = backend.loglikelihood(pairs[:5])
    finally:
        hook.remove()
    assert len(calls) == 1 + math.ceil(multi / batch_size)
    assert two_forwards == pytest.approx(want[:5], abs=1e-4)


def test_context_trailing_space_is_scored_as_part_of_the_continuation(hf):
    moved, plain = hf.loglikelihood([("The patient presented ", "with"), ("The patient presented", " with")])
    assert moved == pytest.approx(plain, abs=1e-6)


def test_empty_context_conditions_on_bos(hf, tiny_model, tiny_tokenizer):
    (got,) = hf.loglikelihood([("", "Aspirin is contraindicated")])
    ids = tiny_tokenizer.encode("Aspirin is contraindicated", add_special_tokens=False)
    assert got == pytest.approx(direct_loglikelihood(tiny_model, [tiny_tokenizer.bos_token_id], ids), abs=1e-4)


def test_long_pairs_are_truncated_from_the_left(make_hf, tiny_model, tiny_tokenizer):
    backend = make_hf(max_length=12, batch_size=2)
    ctx, cont = lm_eval_pair(tiny_tokenizer, TEXT, " heart failure")
    assert len(ctx) + len(cont) > 13
    window = (ctx + cont)[-13:]
    want = direct_loglikelihood(tiny_model, window[: len(window) - len(cont)], cont)
    got = backend.loglikelihood([(TEXT, " heart failure"), ("A", " 45")])
    assert got[0] == pytest.approx(want, abs=1e-4)
    # and it is not the untruncated score
    assert abs(got[0] - direct_loglikelihood(tiny_model, ctx, cont)) > 1e-3


def test_a_continuation_longer_than_the_window_is_an_error(make_hf):
    with pytest.raises(ValueError, match="longer than the context window"):
        make_hf(max_length=4).loglikelihood([("A", " 45-year-old woman with type 2 diabetes")])


# ----------------------------------------------------------------------------- rolling
def brute_force_rolling(model, tokens, prefix, max_len):
    """Token by token: the context lm-eval's rolling windows give token j (context_len=1)."""
    total = 0.0
    for j, tok in enumerate(tokens):
        if j < max_len:  # first window: BOS + everything before j
            context = [prefix] + tokens[:j]
        else:  # later windows predict max_len tokens each, from a max_len-token input
            end = min(max_len * (j // max_len + 1), len(tokens))
            context = tokens[end - max_len - 1 : j]
        total += token_logprobs(model, context + [tok])[-1]
    return total


@pytest.mark.parametrize("batch_size", [1, 3])
def test_rolling_over_several_windows_equals_brute_force(make_hf, tiny_model, tiny_tokenizer, batch_size):
    max_len = 8
    backend = make_hf(max_length=max_len, batch_size=batch_size)
    tokens = tiny_tokenizer.encode(TEXT, add_special_tokens=False)
    assert len(tokens) > 3 * max_len
    want = brute_force_rolling(tiny_model, tokens, tiny_tokenizer.bos_token_id, max_len)
    got = backend.loglikelihood_rolling([TEXT, "Blood pressure"])
    assert got[0] == pytest.approx(want, abs=1e-3)
    # not just the full-context score: the windows really cut the context
    full = sum(token_logprobs(tiny_model, [tiny_tokenizer.bos_token_id] + tokens))
    assert abs(got[0] - full) > 1e-2


def test_rolling_of_a_text_that_fits_is_the_full_loglikelihood_after_bos(hf, tiny_model, tiny_tokenizer):
    text = "The patient presented with chest pain and shortness of breath."
    tokens = tiny_tokenizer.encode(text, add_special_tokens=False)
    full = sum(token_logprobs(tiny_model, [tiny_tokenizer.bos_token_id] + tokens))
    (rolled,) = hf.loglikelihood_rolling([text])
    assert rolled == pytest.approx(full, abs=1e-4)
    assert hf.loglikelihood([("", text)])[0] == pytest.approx(full, abs=1e-4)


def test_rolling_of_an_empty_text_is_zero(hf):
    assert hf.loglikelihood_rolling(["", "A"])[0] == 0.0


# ----------------------------------------------------------------------------- generation
def eos_ids(tokenizer):
    return {tokenizer.eos_token_id}


def test_greedy_equals_a_manual_argmax_loop(hf, tiny_model, tiny_tokenizer):
    sampling = Sampling(max_new_tokens=6)
    got = hf.generate(PROMPTS, sampling)
    for prompt, text in zip(PROMPTS, got):
        ids = tiny_tokenizer.encode(prompt)  # the tokenizer's default: <s> in front
        assert ids[0] == tiny_tokenizer.bos_token_id
        new = manual_greedy(tiny_model, ids, 6, eos_ids(tiny_tokenizer))
        assert text == tiny_tokenizer.decode(new, skip_special_tokens=True)
    assert any(len(t) > 3 for t in got)


def test_greedy_is_deterministic_and_batch_independent(hf, make_hf):
    sampling = Sampling(max_new_tokens=8)
    first = hf.generate(PROMPTS, sampling)
    assert hf.generate(PROMPTS, sampling) == first
    batched = make_hf(batch_size=3).generate(PROMPTS[::-1], sampling)
    assert batched[::-1] == first


def test_sampling_is_reproducible_and_independent_of_batching(hf, make_hf):
    sampling = Sampling(max_new_tokens=10, temperature=1.5, top_p=0.95, seed=11)
    first = hf.generate(PROMPTS, sampling)
    assert hf.generate(PROMPTS, sampling) == first
    assert make_hf(batch_size=4).generate(PROMPTS[::-1], sampling)[::-1] == first
    greedy = hf.generate(PROMPTS, Sampling(max_new_tokens=10))
    other_seed = hf.generate(PROMPTS, Sampling(max_new_tokens=10, temperature=1.5, top_p=0.95, seed=12))
    assert first != greedy and first != other_seed


def test_repeated_prompts_get_different_samples(hf):
    texts = hf.generate(["The patient"] * 4, Sampling(max_new_tokens=10, temperature=2.0, seed=3))
    assert len(set(texts)) > 1


def test_stop_strings_cut_the_completion(hf):
    prompt = ["Question: What is"]
    full = hf.generate(prompt, Sampling(max_new_tokens=12))[0]
    assert len(full) >= 4
    stop = full[2:4]
    cut = hf.generate(prompt, Sampling(max_new_tokens=12, stop=(stop,)))[0]
    assert cut == full[: full.index(stop)]


def test_chat_template_is_used_for_generation(tiny_chat_dir, tiny_model):
    from transformers import AutoTokenizer

    from careval.backends import load_backend
    from support.specs import local_model_spec

    backend = load_backend(
        local_model_spec("tiny-chat", tiny_chat_dir, dtype="float32", chat_template=True, system_prompt="Be brief.")
    )
    tok = AutoTokenizer.from_pretrained(tiny_chat_dir)
    formatted = tok.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is BP?"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert formatted.endswith("<|im_start|>assistant\n")
    ids = tok.encode(formatted)
    want = tok.decode(manual_greedy(tiny_model, ids, 5, eos_ids(tok)), skip_special_tokens=True)
    assert backend.generate(["What is BP?"], Sampling(max_new_tokens=5)) == [want]


def test_chat_template_true_without_a_template_fails_clearly(make_hf):
    with pytest.raises(ChatTemplateError, match="no chat template"):
        make_hf(chat_template=True)


def test_long_prompts_are_left_truncated_to_leave_room_for_generation(make_hf, tiny_model, tiny_tokenizer):
    backend = make_hf(max_length=16)
    ids = tiny_tokenizer.encode(TEXT)
    (text,) = backend.generate([TEXT], Sampling(max_new_tokens=4))
    want = manual_greedy(tiny_model, ids[-12:], 4, eos_ids(tiny_tokenizer))
    assert text == tiny_tokenizer.decode(want, skip_special_tokens=True)


def test_empty_inputs(hf):
    assert hf.generate([], Sampling()) == []
    assert hf.loglikelihood([]) == []
    assert hf.loglikelihood_rolling([]) == []


def test_progress_goes_to_stderr(hf, capfd):
    hf.loglikelihood(PAIRS[:2])
    out, err = capfd.readouterr()
    assert out == "" and "tiny: score" in err


def test_scores_are_finite_in_bfloat16(make_hf):
    scores = make_hf(dtype="bfloat16").loglikelihood(PAIRS[:3])
    assert all(math.isfinite(s) and s < 0 for s in scores)
    assert make_hf(dtype="bfloat16").model.dtype == torch.bfloat16
