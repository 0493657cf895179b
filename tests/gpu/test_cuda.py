"""The GPU check (`pytest -m gpu tests/gpu`, about a minute on any CUDA machine): careval's CUDA paths on tiny
random models built here (no download), against the same computations on the CPU in float32.

Two comparisons per quantity:
- CUDA float32 against CPU float32, tight (FLOAT32_ABS): the same arithmetic in another order, so any
  difference beyond rounding is a device bug (a tensor left on the CPU, a mask or position built for the
  wrong device, a cache that is not moved).
- CUDA bfloat16, the dtype the paper's models run in, against CPU float32, per scored token
  (BF16_NATS_PER_TOKEN). bfloat16 keeps 8 significant bits: a logit of magnitude ~10 (these models are built
  peaked, initializer_range 0.3) is rounded by up to 10 * 2^-9 ~= 0.02, and two layers of bfloat16 activations
  add a few such errors, so a token's log-probability moves by a few hundredths of a nat; 0.15 nats per token
  is several times that, while a wrong token, context or position moves a log-likelihood on these models by
  nats (the CPU tests' own checks). Greedy text in bfloat16 is compared with a hand-written greedy loop on the
  same bfloat16 CUDA model (argmax flips between dtypes are legitimate; between two implementations on one
  model and device they are not).

Without CUDA every test here skips, saying so. Part of `bash run.sh test` (skipped on CPU), outside the fast tier.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from support.reference import manual_greedy  # noqa: E402
from support.tiny_models import CHATML, build_llama  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="the GPU check needs a CUDA device (none visible)"),
]

FLOAT32_ABS = 1e-3  # nats, on sums of up to ~40 token log-probabilities of magnitude <= ~20
BF16_NATS_PER_TOKEN = 0.15

PAIRS = [
    ("The patient presented with", " chest pain and shortness of breath."),
    ("Aspirin is contraindicated in patients with", " active bleeding."),
    ("Blood pressure was 150/95 mmHg;", " heart rate 88 beats per minute."),
    ("Question: What is the first-line treatment for hypertension? Answer:", " lifestyle changes."),
]
TEXTS = [
    "A 45-year-old woman with type 2 diabetes was started on metformin 500 mg twice daily. " * 3,
    "The differential diagnosis includes pneumonia, pulmonary embolism and heart failure.",
]
PROMPTS = ["The patient presented with", "Aspirin is", "The differential diagnosis includes"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    """The backend tests' tiny Llama (tests/support/tiny_models.py) with a ChatML template (for the judge)."""
    from transformers import AutoTokenizer

    out = build_llama(
        tmp_path_factory.mktemp("tiny-llama-gpu"),
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    tok = AutoTokenizer.from_pretrained(out)
    tok.chat_template = CHATML
    tok.save_pretrained(out)
    return out


def backend(folder: Path, device: str, dtype: str, **options):
    from careval.backends.hf.backend import HFBackend

    return HFBackend.load("tiny", str(folder), device=device, dtype=dtype, **options)


@pytest.fixture(scope="module")
def cpu(tiny_dir):
    return backend(tiny_dir, "cpu", "float32", batch_size=2)


@pytest.fixture(scope="module")
def cuda32(tiny_dir):
    return backend(tiny_dir, "cuda", "float32", batch_size=2)


@pytest.fixture(scope="module")
def cuda16(tiny_dir):
    return backend(tiny_dir, "cuda", "bfloat16", batch_size=2)


def token_counts(tokenizer, texts: list[str]) -> list[int]:
    return [len(tokenizer(text, add_special_tokens=False).input_ids) for text in texts]


def test_the_backends_run_where_and_how_they_were_asked(cpu, cuda32, cuda16):
    assert cpu.device.type == "cpu" and cuda32.device.type == "cuda" and cuda16.device.type == "cuda"
    assert next(cuda32.model.parameters()).dtype == torch.float32
    assert next(cuda16.model.parameters()).dtype == torch.bfloat16


def test_loglikelihoods(cpu, cuda32, cuda16):
    want = cpu.loglikelihood(PAIRS)
    assert cuda32.loglikelihood(PAIRS) == pytest.approx(want, abs=FLOAT32_ABS, rel=0)
    tokens = token_counts(cpu.tokenizer, [continuation for _, continuation in PAIRS])
    for got, ref, n in zip(cuda16.loglikelihood(PAIRS), want, tokens):
        assert math.isfinite(got) and abs(got - ref) <= BF16_NATS_PER_TOKEN * n, (got, ref, n)


def test_rolling_perplexity(cpu, cuda32, cuda16):
    want = cpu.loglikelihood_rolling(TEXTS)
    assert cuda32.loglikelihood_rolling(TEXTS) == pytest.approx(want, abs=FLOAT32_ABS, rel=0)
    for got, ref, n in zip(cuda16.loglikelihood_rolling(TEXTS), want, token_counts(cpu.tokenizer, TEXTS)):
        assert math.isfinite(got) and abs(got - ref) <= BF16_NATS_PER_TOKEN * n, (got, ref, n)


def test_greedy_generation(cpu, cuda32, tiny_dir):
    from careval.backends import Sampling

    sampling = Sampling(max_new_tokens=12)
    assert cuda32.generate(PROMPTS, sampling) == cpu.generate(PROMPTS, sampling)
    one = backend(tiny_dir, "cuda", "bfloat16", batch_size=1)
    eos = {one.tokenizer.eos_token_id}
    for prompt, text in zip(PROMPTS, one.generate(PROMPTS, sampling)):
        ids = one.tokenizer(prompt).input_ids
        by_hand = manual_greedy(one.model, ids, 12, eos)
        assert text == one.tokenizer.decode(by_hand, skip_special_tokens=True)


def test_relaxed_perplexity(tiny_dir):
    """The CPU float32 run samples the continuations; the CUDA runs score those same continuations."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from careval.metrics.relaxed_perplexity import relaxed_perplexity

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    question = tok("Question: What is the first-line treatment for hypertension? Answer:").input_ids
    target = tok(" lifestyle changes.", add_special_tokens=False).input_ids
    options = dict(l=2, s=4, stride=2, max_tokens=6, seed=3)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32).eval()
    want = relaxed_perplexity(model, question, target, **options)
    assert want.continuations
    for dtype, tolerance in ((torch.float32, FLOAT32_ABS), (torch.bfloat16, BF16_NATS_PER_TOKEN)):
        on_gpu = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=dtype).eval().to("cuda")
        got = relaxed_perplexity(on_gpu, question, target, continuations=want.continuations, **options)
        assert got.steps == want.steps
        # log_terms are log-probabilities of the whole target: per-token tolerance times its length
        assert got.log_terms == pytest.approx(want.log_terms, abs=tolerance * len(target), rel=0)
        # cross-entropy is per target token
        assert got.cross_entropy == pytest.approx(want.cross_entropy, abs=tolerance, rel=0)


def test_judge_score_distribution(cpu, cuda16):
    """The five probabilities of "1".."5" after the judge's verdict (single-token continuations): a log-probability
    within BF16_NATS_PER_TOKEN of the CPU's for each score, so each probability (normalised over the five) within
    2 * BF16_NATS_PER_TOKEN in log; the most likely score the same wherever the CPU's top two are further apart."""
    from careval.metrics.judge import judge_prompt, rubric_text
    from careval.metrics.judge_distribution import score_distributions

    rubric = rubric_text("helpfulness")[1]
    prompts = [
        judge_prompt("What lowers fever?", "Paracetamol.", "Paracetamol or ibuprofen.", rubric),
        judge_prompt("What lowers fever?", "Antibiotics.", "Paracetamol or ibuprofen.", rubric),
    ]
    outputs = ["The response is correct and short. [RESULT] 5", "The response is wrong because"]
    want = score_distributions(cpu, prompts, outputs)
    got = score_distributions(cuda16, prompts, outputs)
    assert want is not None and got is not None
    for g, w in zip(got, want):
        assert sum(g) == pytest.approx(1.0, abs=1e-6)
        assert [math.log(p) for p in g] == pytest.approx([math.log(p) for p in w], abs=2 * BF16_NATS_PER_TOKEN)
        top, second = sorted(w, reverse=True)[:2]
        if math.log(top) - math.log(second) > 2 * BF16_NATS_PER_TOKEN:
            assert g.index(max(g)) == w.index(max(w))


def test_warm_worker_gpu_mode():
    """The warm worker on a GPU machine loads no model and its forked jobs put theirs on the GPU in bfloat16
    (tests/warm/test_warm_worker.py, the test that skips without CUDA): run here so the GPU check covers it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-rs",
            "tests/warm/test_warm_worker.py",
            "-k",
            "on_a_gpu_machine",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]
