"""Relaxed Perplexity's vLLM path, with a fake engine (vLLM is not installed here).

The fake ``LLM.generate`` answers prompt-logprob requests from a tiny torch model and
sampling requests with fixed continuations, so the request construction (which prompts,
which SamplingParams) and the assembly of the results are checked against the definition
computed plainly (support.reference.relaxed_terms) on the same model and continuations.
"""

from __future__ import annotations

import importlib
import math
from types import SimpleNamespace

import polars as pl
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from careval.backends.vllm import VLLMBackend  # noqa: E402
from support.reference import relaxed_terms  # noqa: E402

rp = importlib.import_module("careval.metrics.relaxed_perplexity")
job = importlib.import_module("careval.jobs.relaxed_perplexity")


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class FakeLLM:
    """vllm.LLM.generate as the backend uses it: prompt logprobs from `model`, samples from `samples`."""

    def __init__(self, model, samples):
        self.model = model
        self.samples = samples
        self.calls = []

    def _logprobs(self, ids):
        with torch.no_grad():
            logp = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
        return [float(logp[i - 1, ids[i]]) for i in range(1, len(ids))]

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((prompts, params))
        outputs = []
        for prompt in prompts:
            ids = prompt["prompt_token_ids"]
            if params.kwargs.get("prompt_logprobs") is not None:
                values = self._logprobs(ids)
                # vLLM: None for the first token, then {token_id: Logprob} per position
                prompt_logprobs = [None] + [{tok: SimpleNamespace(logprob=v)} for tok, v in zip(ids[1:], values)]
                outputs.append(SimpleNamespace(prompt_logprobs=prompt_logprobs, outputs=[]))
            else:
                completions = [
                    SimpleNamespace(
                        token_ids=list(c),
                        cumulative_logprob=sum(self._logprobs(ids + list(c))[len(ids) - 1 :]),
                        logprobs=None,
                    )
                    for c in self.samples
                ]
                outputs.append(SimpleNamespace(prompt_logprobs=None, outputs=completions))
        return outputs


def tiny_model():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=7,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
        bos_token_id=0,
        eos_token_id=4,
        pad_token_id=0,
    )
    return transformers.LlamaForCausalLM(config).eval().double()


SAMPLES = [(1, 2, 3, 5), (1, 2, 6, 6), (3, 3, 3, 3), (1, 2, 3, 5)]  # one duplicate


def fake_backend(model):
    backend = object.__new__(VLLMBackend)  # no engine start: only what the relaxed-perplexity path reads
    backend.llm = FakeLLM(model, SAMPLES)
    backend._SamplingParams = FakeSamplingParams
    backend.tokenizer = None
    backend.add_bos = None
    backend.max_length = 100
    backend.chat_template = False
    backend.system_prompt = None
    return backend


@pytest.mark.parametrize("skewed", [True, False])
def test_vllm_path_builds_the_prompts_and_matches_the_definition(skewed):
    model = tiny_model()
    backend = fake_backend(model)
    q, targets = [0, 5, 2], [[3, 1], [6]]
    options = dict(l=2, s=4, stride=2, max_tokens=4, top_p=0.8, seed=3, skewed=skewed)
    got = rp.relaxed_perplexities(backend, q, targets, **options)

    (sample_prompts, sample_params), (score_prompts, score_params) = backend.llm.calls
    assert sample_prompts == [{"prompt_token_ids": q}]
    kw = sample_params.kwargs
    assert (kw["n"], kw["max_tokens"], kw["min_tokens"], kw["top_p"], kw["temperature"]) == (4, 4, 4, 0.8, 1.0)
    assert kw["logprobs"] == 0 and isinstance(kw["seed"], int)
    assert score_params.kwargs["prompt_logprobs"] == 0 and score_params.kwargs["max_tokens"] == 1

    # the two most likely distinct samples are kept, as the hf sampler's selection would
    joint = [sum(backend.llm._logprobs(q + list(c))[len(q) - 1 :]) for c in SAMPLES]
    kept = [SAMPLES[i] for i in rp.select_continuations(SAMPLES, joint, 2)]
    assert list(got[0].continuations) == kept
    # one q + c[:n] + t prompt per distinct prefix and target
    prefixes = [p for group in rp.step_prefixes(kept, [0, 2, 4]).values() for p in group]
    assert [p["prompt_token_ids"] for p in score_prompts] == [q + list(p) + t for t in targets for p in prefixes]

    for target, result in zip(targets, got):
        want = relaxed_terms(model, q, target, kept, [0, 2, 4], skewed)
        assert result.steps == (0, 2, 4)
        assert result.log_terms == pytest.approx(want, abs=1e-10)
        assert result.perplexity == pytest.approx(math.exp(-sum(want) / (4 + len(target))), rel=1e-10)


def test_the_job_runs_a_vllm_backend_through_the_interface():
    model = tiny_model()
    backend = fake_backend(model)
    # a tokenizer stand-in: characters "0".."6" are the token ids
    backend.tokenizer = SimpleNamespace(
        encode=lambda text, add_special_tokens=True: [int(ch) for ch in text if ch.isdigit()],
        bos_token=None,
        bos_token_id=None,
        eos_token_id=4,
        decode=lambda ids: "",
    )
    samples = pl.DataFrame({"id": ["x"], "question": ["52"], "reference": ["31"], "meta": ["{}"]})
    options = {"l": 2, "s": 4, "stride": 2, "max_tokens": 4, "seed": 3}
    scores = job.score_relaxed_perplexity(backend, samples, "0{question}", options)
    assert scores["status"].to_list() == ["ok", "ok"]
    kept = rp.relaxed_perplexities(fake_backend(model), [0, 5, 2], [[3, 1]], **options)[0].continuations
    want = relaxed_terms(model, [0, 5, 2], [3, 1], kept, [0, 2, 4], skewed=True)
    value = dict(zip(scores["metric"], scores["value"]))
    assert value["relaxed_perplexity"] == pytest.approx(math.exp(-sum(want) / (4 + 2)), rel=1e-10)
    assert math.isfinite(value["relaxed_cross_entropy"])
