"""The real models prepared under resources/models: SmolLM2-135M-Instruct (chat, no BOS
added by its tokenizer) and, where present, Gemma-3-270m (base, its tokenizer adds BOS)."""

from __future__ import annotations

import pytest

from careval.backends import Sampling
from careval.backends.hf.backend import HFBackend
from support.reference import direct_loglikelihood, lm_eval_pair, manual_greedy, token_logprobs

pytestmark = pytest.mark.slow

PAIRS = [
    ("Question: Which organ produces insulin?\nAnswer:", " The pancreas"),
    ("Question: Which organ produces insulin?\nAnswer:", " The liver"),
    ("The normal resting heart rate of an adult is between 60 and", " 100 beats per minute."),
    ("Hypertension is defined as a blood pressure above ", "140/90 mmHg."),
    ("", "Metformin is a first-line drug for type 2 diabetes."),
]


@pytest.fixture(scope="module")
def smol(smollm2_dir):
    return HFBackend.load("smollm2", str(smollm2_dir), dtype="float32", chat_template=True, batch_size=4, threads=1)


@pytest.fixture(scope="module")
def reference(smollm2_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(smollm2_dir)


def test_loglikelihood_equals_a_direct_forward_pass(smol, reference):
    model, tok = reference
    got = smol.loglikelihood(PAIRS)
    want = [direct_loglikelihood(model, *lm_eval_pair(tok, c, x)) for c, x in PAIRS]
    assert got == pytest.approx(want, abs=1e-4)
    assert got[0] > got[1]  # a trained model prefers the right answer


def test_rolling_equals_the_full_loglikelihood_when_the_text_fits(smol, reference):
    model, tok = reference
    text = "Aspirin irreversibly inhibits cyclooxygenase, reducing thromboxane A2 synthesis."
    full = sum(token_logprobs(model, [tok.bos_token_id] + tok.encode(text, add_special_tokens=False)))
    assert smol.loglikelihood_rolling([text]) == pytest.approx([full], abs=1e-3)


def test_chat_greedy_generation_equals_a_manual_loop(smol, reference):
    model, tok = reference
    prompt = "What is the normal range of serum sodium?"
    formatted = smol.format(prompt)
    assert "<|im_start|>assistant" in formatted and formatted.endswith("<|im_start|>assistant\n")
    ids = tok.encode(formatted, add_special_tokens=False)
    want = tok.decode(manual_greedy(model, ids, 8, {2, 0}), skip_special_tokens=True)
    (got,) = smol.generate([prompt], Sampling(max_new_tokens=8))
    assert got == want and got.strip()


# ----------------------------------------------------------------------------- Gemma 3
@pytest.fixture(scope="module")
def gemma(gemma_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    backend = HFBackend.load("gemma3", str(gemma_dir), dtype="float32", batch_size=3, threads=1)
    model = AutoModelForCausalLM.from_pretrained(gemma_dir, dtype=torch.float32).eval()
    return backend, model, AutoTokenizer.from_pretrained(gemma_dir)


def test_gemma_scores_with_bos_like_a_direct_forward_pass(gemma):
    backend, model, tok = gemma
    got = backend.loglikelihood(PAIRS)
    want = []
    for c, x in PAIRS:
        ctx, cont = lm_eval_pair(tok, c, x)
        assert ctx[0] == tok.bos_token_id and ctx.count(tok.bos_token_id) == 1
        want.append(direct_loglikelihood(model, ctx, cont))
    assert got == pytest.approx(want, abs=1e-4)
    assert got[0] > got[1]


def test_gemma_batched_greedy_generation_equals_a_manual_loop(gemma):
    backend, model, tok = gemma
    prompts = ["The pancreas produces", "Hypertension is defined as a blood pressure above"]
    got = backend.generate(prompts, Sampling(max_new_tokens=6))
    for prompt, text in zip(prompts, got):
        ids = tok.encode(prompt)
        assert ids[0] == tok.bos_token_id
        assert text == tok.decode(manual_greedy(model, ids, 6, {tok.eos_token_id, 106}), skip_special_tokens=True)
