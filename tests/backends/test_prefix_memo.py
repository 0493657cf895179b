"""Remembered prefixes (hf/scoring.py, hf/generation.py): a scoring context that starts with what generate just ran continues
from that row's keys/values; the scores equal those of a backend that remembers nothing."""

from __future__ import annotations

import json

import pytest
import torch
from test_shared_prefix import counted_forwards

from careval.backends import Sampling
from careval.backends.hf import generation
from careval.backends.hf.backend import HFBackend
from careval.backends.tokenization import encode_pair
from careval.metrics.judge import judge_prompt, rubric_text
from careval.metrics.judge_distribution import score_distributions
from support.tiny_models import tiny_gemma3_config

PROMPTS = [
    "Question: What is the first-line treatment for hypertension? Answer:",
    "The patient presented with chest pain and",
    "Blood pressure was 150/95 mmHg; heart rate",
]


def judged(backend, prompts, outputs, continuations):
    """Judge-like requests: the formatted prompt, the output and a result mark, then each continuation."""
    return [(f"{backend.format(p)}{o} [RESULT] ", x) for p, o in zip(prompts, outputs) for x in continuations]


def forgetting(backend, pairs):
    """The same requests scored with nothing remembered."""
    memo = list(backend._memo)
    backend._memo.clear()
    try:
        return backend.loglikelihood(pairs)
    finally:
        backend._memo[:] = memo


# float32: a sum of ~50 nats has an ULP of 3.8e-6, and the memo and plain paths sum in differently shaped
# batches (a few ULP apart: 1.1e-5 seen under xdist); a wrong token or position is off by far more than 5e-5
@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 5e-5), (torch.float64, 1e-9)])
@pytest.mark.parametrize("batch_size", [1, 2])
def test_scores_on_a_remembered_prefix_equal_the_plain_ones(make_hf, dtype, tolerance, batch_size):
    backend = make_hf(batch_size=batch_size)
    backend.model.to(dtype)
    outputs = backend.generate(PROMPTS, Sampling(max_new_tokens=6))
    assert len(backend._memo) == len(PROMPTS)
    pairs = judged(backend, PROMPTS, outputs, ["1", "2", "3", " chest pain", " lifestyle changes."])
    with counted_forwards(backend.model) as calls:
        got = backend.loglikelihood(pairs)
    assert backend.memo_hits == len(PROMPTS)
    # no context runs from its start: each continues its remembered prefix, then its continuations do
    assert calls and all(continues for _, _, continues in calls)
    ctx_tokens = sum(len(encode_pair(backend.tokenizer, c, x, add_bos=None)[0]) for c, x in pairs[::5])
    assert sum(length for batch, length, _ in calls if batch == 1) < ctx_tokens
    want = forgetting(backend, pairs)
    assert got == pytest.approx(want, abs=tolerance, rel=0)
    backend.shared_prefix = False  # the plain path, one whole forward per request
    assert got == pytest.approx(backend.loglikelihood(pairs), abs=tolerance, rel=0)


def test_sampled_rows_are_remembered_too(make_hf):
    backend = make_hf(batch_size=3)
    outputs = backend.generate(PROMPTS, Sampling(max_new_tokens=5, temperature=1.0, seed=7))
    pairs = judged(backend, PROMPTS, outputs, ["1", "5"])
    got = backend.loglikelihood(pairs)
    assert backend.memo_hits == len(PROMPTS)
    assert got == pytest.approx(forgetting(backend, pairs), abs=1e-5)


def test_other_contexts_are_scored_as_before(make_hf):
    backend = make_hf(batch_size=2)
    backend.generate(PROMPTS[:1], Sampling(max_new_tokens=4))
    pairs = [("Aspirin is contraindicated in", " patients"), ("Aspirin is contraindicated in", " bleeding")]
    got = backend.loglikelihood(pairs)
    assert backend.memo_hits == 0
    assert got == pytest.approx(forgetting(backend, pairs), abs=1e-6)


def test_each_generate_call_forgets_the_last(make_hf):
    backend = make_hf(batch_size=2)
    first = backend.generate(PROMPTS[:2], Sampling(max_new_tokens=4))
    backend.generate(PROMPTS[2:], Sampling(max_new_tokens=4))
    assert len(backend._memo) == 1
    backend.loglikelihood(judged(backend, PROMPTS[:2], first, ["1", "2"]))
    assert backend.memo_hits == 0


def test_the_byte_budget_bounds_what_is_kept(make_hf, monkeypatch):
    backend = make_hf(batch_size=3)
    backend.generate(PROMPTS, Sampling(max_new_tokens=4))
    one = sum(2 * k.nbytes for k, _ in backend._memo[0][1])
    backend._prefix_budget = one  # room for about one row
    outputs = backend.generate(PROMPTS, Sampling(max_new_tokens=4))
    assert 1 <= len(backend._memo) < len(PROMPTS)
    pairs = judged(backend, PROMPTS, outputs, ["1", "2"])
    assert backend.loglikelihood(pairs) == pytest.approx(forgetting(backend, pairs), abs=1e-5)
    gpu_like = make_hf(batch_size=3)
    gpu_like._prefix_budget = 0  # what a CUDA device gets
    gpu_like.generate(PROMPTS, Sampling(max_new_tokens=4))
    assert gpu_like._memo == []


@pytest.fixture(scope="module")
def tiny_sliding_dir(tiny_model_dir, tmp_path_factory):
    """A 2-layer random Gemma 3 (one sliding-window layer of 4 positions) with the tiny tokenizer."""
    from transformers import AutoTokenizer, Gemma3ForCausalLM

    out = tmp_path_factory.mktemp("tiny-gemma3")
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids = {f"{name}_token_id": getattr(tok, f"{name}_token_id") for name in ("pad", "bos", "eos")}
    config = tiny_gemma3_config(len(tok), **ids)
    torch.manual_seed(0)
    Gemma3ForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_a_sliding_window_model_remembers_nothing(tiny_sliding_dir):
    backend = HFBackend.load("g", str(tiny_sliding_dir), dtype="float32", batch_size=2)
    outputs = backend.generate(PROMPTS, Sampling(max_new_tokens=6))
    assert backend._memo == []
    # and its prompts are not prefilled apart (a sliding layer's cache is not the whole prefix)
    backend.model.to(torch.float64)
    assert backend.generate(SHARING, Sampling(max_new_tokens=8)) == plain_generate(
        backend, SHARING, Sampling(max_new_tokens=8)
    )
    backend.model.to(torch.float32)
    pairs = judged(backend, PROMPTS, outputs, ["1", "2"])
    got = backend.loglikelihood(pairs)
    backend.shared_prefix = False
    assert got == pytest.approx(backend.loglikelihood(pairs), abs=1e-5)


@pytest.mark.slow
def test_smollm2_judge_distributions_on_remembered_prompts(smollm2_dir, repo_root):
    """prometheus-eval's prompt and system prompt on SmolLM2, as the demo's judge: the second pass runs a few
    tokens per verdict, and the five probabilities equal those of a second full prefill."""
    from prometheus_eval.prompts import ABS_SYSTEM_PROMPT

    judge = HFBackend.load(
        "judge",
        str(smollm2_dir),
        dtype="float32",
        batch_size=4,
        threads=1,
        chat_template=True,
        system_prompt=ABS_SYSTEM_PROMPT,
    )
    rows = [json.loads(line) for line in (repo_root / "resources/demo/demo_open_qa.jsonl").read_text().splitlines()]
    rubric = rubric_text("helpfulness")[1]
    prompts = [judge_prompt(r["question"], r["answer"][:120], r["answer"], rubric) for r in rows[:3]]
    outputs = judge.generate(prompts, Sampling(max_new_tokens=24))
    with counted_forwards(judge.model) as calls:
        got = score_distributions(judge, prompts, outputs)
    assert judge.memo_hits == len(prompts) and all(continues for _, _, continues in calls)
    # a few tokens per verdict (past the remembered prompt and feedback, and the score tokens), not ~500
    assert sum(batch * length for batch, length, _ in calls) < 20 * len(prompts)
    judge._memo.clear()
    want = score_distributions(judge, prompts, outputs)
    assert [p for ps in got for p in ps] == pytest.approx([p for ps in want for p in ps], abs=1e-4)
    # the prompts were prefilled from each other's prefixes (prometheus' instructions); the same texts
    assert outputs == plain_generate(judge, prompts, Sampling(max_new_tokens=24))


# ----------------------------------------------------------------------------- shared-prefix prefill
SHARING = [  # two prompts sharing most tokens, a repeated prompt, and one sharing nothing
    "Question: What is the first-line treatment for hypertension? Answer:",
    "Question: What is the first-line treatment for heart failure? Answer:",
    "The patient presented with chest pain and",
    "Question: What is the first-line treatment for hypertension? Answer:",
    "Blood pressure was 150/95 mmHg; heart rate",
]


def plain_generate(backend, prompts, sampling):
    """generate as transformers runs it: one left-padded batched prefill, its own DynamicCache."""
    backend._growing_cache = False
    try:
        return backend.generate(prompts, sampling)
    finally:
        backend._growing_cache = True


@pytest.mark.parametrize("batch_size", [1, 2, 8])
@pytest.mark.parametrize("sampling", [Sampling(max_new_tokens=8), Sampling(max_new_tokens=8, temperature=1.0, seed=3)])
def test_prefilled_generation_equals_transformers_generate(make_hf, batch_size, sampling):
    backend = make_hf(batch_size=batch_size)
    backend.model.to(torch.float64)  # no near-ties: the texts must be identical
    assert backend.generate(SHARING, sampling) == plain_generate(backend, SHARING, sampling)


@pytest.mark.parametrize("budget", [generation._PREFIX_BYTES, 1])  # 1: no prompt kept to start another from
def test_a_one_token_prompt_is_all_padding_in_the_prefilled_cache(make_hf, budget):
    backend = make_hf(batch_size=4)
    backend.model.to(torch.float64)
    backend._prefix_budget = budget
    prompts = ["", "The patient presented with", ""]  # "" is the BOS alone
    sampling = Sampling(max_new_tokens=5)
    assert backend.generate(prompts, sampling) == plain_generate(backend, prompts, sampling)


def test_each_prompt_prefix_runs_once(make_hf):
    backend = make_hf(batch_size=8)
    ids = [encode_pair(backend.tokenizer, backend.format(p), "x", add_bos=None)[0] for p in SHARING]
    with counted_forwards(backend.model) as calls:
        backend.generate(SHARING, Sampling(max_new_tokens=1))
    prefill = [length for batch, length, _ in calls if batch == 1]
    # brute force: each prompt but its last token, less its longest common prefix with a prompt run before it
    # (longest first, as generate orders them)
    order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
    expected = []
    for k, i in enumerate(order):
        run = ids[i][:-1]
        shared = max((_common(run, ids[j][:-1]) for j in order[:k]), default=0)
        if shared < len(run):
            expected.append(len(run) - shared)
    assert prefill == expected and sum(expected) < sum(len(t) - 1 for t in ids)
    # then generate runs only the prompts' last tokens, as one batch
    assert [(batch, length) for batch, length, _ in calls if batch != 1] == [(len(SHARING), 1)]


def _common(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
