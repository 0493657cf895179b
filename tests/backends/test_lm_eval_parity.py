"""HFBackend against lm-evaluation-harness's own HFLM, where lm-eval is importable.

lm-eval is not a careval dependency; run with it installed next to the project, e.g.
``pip install --no-deps lm-eval==0.4.13`` in a throwaway venv that sees the project's.
"""

from __future__ import annotations

import pytest

from careval.backends import Sampling
from careval.backends.hf.backend import HFBackend
from careval.backends.tokenization import rolling_pairs
from support.reference import token_logprobs

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

PAIRS = [
    ("The patient presented with", " chest pain"),
    ("Question: What is the first-line treatment for hypertension? Answer:", " lifestyle changes."),
    ("Blood pressure was ", "150/95 mmHg; heart rate 88 beats per minute."),
    ("", "Aspirin is contraindicated in patients with active bleeding."),
]
TEXTS = [
    "A 45-year-old woman with type 2 diabetes was started on metformin 500 mg twice daily. "
    "The differential diagnosis includes pneumonia, pulmonary embolism and heart failure.",
    "Blood pressure was 150/95 mmHg.",
]
PROMPTS = ["The patient presented with", "Question: What is", "A"]


def _hflm(path, max_length):
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=str(path), backend="causal", device="cpu", dtype="float32", batch_size=3, max_length=max_length
    )


def _requests(kind, args):
    from lm_eval.api.instance import Instance

    return [Instance(request_type=kind, doc={}, arguments=a, idx=i) for i, a in enumerate(args)]


def _compare(path, max_length, bos_doubling):
    ours = HFBackend.load("m", str(path), dtype="float32", batch_size=3, max_length=max_length)
    theirs = _hflm(path, max_length)

    want = [ll for ll, _ in theirs.loglikelihood(_requests("loglikelihood", PAIRS))]
    assert ours.loglikelihood(PAIRS) == pytest.approx(want, abs=1e-4)

    want = theirs.loglikelihood_rolling(_requests("loglikelihood_rolling", [(t,) for t in TEXTS]))
    if not bos_doubling:
        assert ours.loglikelihood_rolling(TEXTS) == pytest.approx(want, abs=1e-3)
    else:
        # lm-eval 0.4.13 windows the tokenizer's ids *with* their BOS after the prefix BOS
        # ([BOS, BOS, t1, ...]); careval drops the tokenizer's BOS. Same windows otherwise:
        tok, bos = ours.tokenizer, ours.tokenizer.bos_token_id
        lm_eval_style = [sum(ours.score_tokens(rolling_pairs(tok.encode(t), bos, max_length))) for t in TEXTS]
        assert lm_eval_style == pytest.approx(want, abs=1e-3)
        short = tok.encode(TEXTS[1], add_special_tokens=False)
        assert want[1] == pytest.approx(sum(token_logprobs(ours.model, [bos, bos] + short)), abs=1e-4)
        assert ours.loglikelihood_rolling(TEXTS)[1] == pytest.approx(
            sum(token_logprobs(ours.model, [bos] + short)), abs=1e-4
        )

    gen_kwargs = {"until": [], "max_gen_toks": 8, "do_sample": False}
    want = theirs.generate_until(_requests("generate_until", [(p, gen_kwargs) for p in PROMPTS]))
    assert ours.generate(PROMPTS, Sampling(max_new_tokens=8)) == want


def test_tiny_model_with_a_bos_adding_tokenizer_matches_lm_eval(tiny_model_dir):
    _compare(tiny_model_dir, max_length=32, bos_doubling=True)


@pytest.mark.slow
def test_smollm2_matches_lm_eval(smollm2_dir):
    _compare(smollm2_dir, max_length=32, bos_doubling=False)


@pytest.mark.slow
def test_gemma3_matches_lm_eval(gemma_dir):
    # Gemma's tokenizer adds BOS itself: the windows differ as for the tiny model
    _compare(gemma_dir, max_length=32, bos_doubling=True)
