"""The judge's score distribution: context, probabilities, most likely and expected grade, the job's rows,
the judge without log-probabilities, and the real demo judge (hf, and vLLM on a fake engine) against a
plain transformers forward."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import polars as pl
import pytest
from prometheus_eval import prompts as pe_prompts

from careval.backends import Backend, Capabilities, CapabilityError
from careval.backends.openai import OpenAICompatBackend
from careval.metrics.judge import JudgeConfigError, judge_prompt, rubric_text, score_judge
from careval.metrics.judge_distribution import (
    expected_score,
    most_likely,
    probabilities,
    score_distributions,
    scoring_context,
)
from support.fake_openai import FakeOpenAIServer

# ---------------------------------------------------------------- the five probabilities


@pytest.mark.parametrize(
    "probs, mode, mean",
    [
        ([0.1, 0.2, 0.4, 0.2, 0.1], 3, 0.1 * 1 + 0.2 * 2 + 0.4 * 3 + 0.2 * 4 + 0.1 * 5),  # 3.0
        ([0.05, 0.05, 0.1, 0.3, 0.5], 5, 0.05 + 0.1 + 0.3 + 1.2 + 2.5),  # 4.15
        ([0.6, 0.0001, 0.0001, 0.0001, 0.3997], 1, 0.6 + 0.0002 + 0.0003 + 0.0004 + 0.3997 * 5),
        ([0.3, 0.3, 0.2, 0.1, 0.1], 1, 0.3 + 0.6 + 0.6 + 0.4 + 0.5),  # a tie goes to the lower score
    ],
)
def test_constructed_distribution_gives_argmax_and_mean(probs, mode, mean):
    # log-likelihoods that leave 5% of the mass elsewhere (other tokens): renormalised away
    logliks = [math.log(0.05 * p) for p in probs]
    got = probabilities(logliks)
    assert got == pytest.approx(probs, abs=1e-12)
    assert most_likely(got) == mode
    assert expected_score(got) == pytest.approx(mean, abs=1e-12)


def test_probabilities_reject_a_wrong_count_or_non_finite_values():
    with pytest.raises(ValueError, match="need 5"):
        probabilities([-1.0] * 4)
    with pytest.raises(ValueError, match="not all finite"):
        probabilities([-1.0, -2.0, float("nan"), -1.0, -1.0])


@pytest.mark.parametrize(
    "output, context",
    [
        ("The answer is right. [RESULT] 4", "PROMPT>The answer is right. [RESULT] "),
        ("Feedback: vague. [RESULT] 4\nI hope this helps!", "PROMPT>Feedback: vague. [RESULT] "),
        ("Good. [RESULT] excellent", "PROMPT>Good. [RESULT] "),
        (
            "The response misses the dose and",
            "PROMPT>The response misses the dose and [RESULT] ",
        ),  # cut at max_new_tokens
        ("  \n", "PROMPT>[RESULT] "),
        ("[result] 7", "PROMPT>[RESULT] "),
    ],
)
def test_the_score_is_asked_where_prometheus_writes_it(output, context):
    assert scoring_context("PROMPT>", output) == context


# ---------------------------------------------------------------- the job, on a scripted judge


class ScoringJudge(Backend):
    """Generates scripted verdicts; scores "1".."5" after a context by a per-response table of probabilities."""

    name, backend = "scripted", "scripted"
    capabilities = Capabilities(prompt_logprobs=True, top_logprobs=False, chat_template=True, max_gpus=0)

    def __init__(self, verdicts: dict[str, str], tables: dict[str, list[float]]):
        self.verdicts, self.tables = verdicts, tables
        self.pairs: list[tuple[str, str]] = []
        self.calls = 0

    @staticmethod
    def response(text: str) -> str:
        return text.split("###Response to evaluate:\n", 1)[1].split("\n", 1)[0]

    def format(self, prompt: str, instruction: str | None = None) -> str:
        return f"<user>{instruction or ''}{prompt}<assistant>"

    def generate(self, prompts, sampling, instruction=None):
        return [self.verdicts[self.response(p)] for p in prompts]

    def loglikelihood(self, pairs):
        self.calls += 1
        self.pairs += pairs
        # a constant offset for the mass on other tokens: it must not matter
        return [math.log(self.tables[self.response(c)][int(x) - 1]) - 2.0 for c, x in pairs]


@pytest.fixture
def frames():
    samples = pl.DataFrame({"id": ["a", "b", "c"], "reference": ["ref a", "ref b", "ref c"]})
    generations = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "prompt": ["Qa?", "Qb?", "Qc?"],
            "output": ["answer a", "answer b", ""],
            "status": ["ok", "ok", "empty_output"],
        }
    )
    return samples, generations


def test_parsed_verdict_keeps_prometheus_number_and_the_rest_comes_from_the_distribution(frames):
    samples, generations = frames
    tables = {"answer a": [0.1, 0.6, 0.1, 0.1, 0.1], "answer b": [0.05, 0.05, 0.1, 0.5, 0.3]}
    judge = ScoringJudge({"answer a": "Correct and complete. [RESULT] 4", "answer b": "It names the drug but"}, tables)
    scores = score_judge(judge, samples, generations, {"rubrics": ["helpfulness"], "retries": 2})
    rows = {(r["id"], r["metric"]): r for r in scores.iter_rows(named=True)}

    a, a_expected = rows["a", "judge_helpfulness"], rows["a", "judge_helpfulness_expected"]
    # the parser's 4 stands, although the judge's own distribution peaks at 2
    assert (a["value"], a["status"]) == (4.0, "ok")
    assert (a_expected["value"], a_expected["status"]) == (pytest.approx(0.1 + 1.2 + 0.3 + 0.4 + 0.5), "ok")
    b, b_expected = rows["b", "judge_helpfulness"], rows["b", "judge_helpfulness_expected"]
    assert (b["value"], b["status"]) == (4.0, "from_distribution")
    assert b_expected["value"] == pytest.approx(0.05 + 0.1 + 0.3 + 2.0 + 1.5)
    for row in (a, a_expected):
        assert [row[f"p{s}"] for s in range(1, 6)] == pytest.approx(tables["answer a"])
    for row in (b, b_expected):
        assert [row[f"p{s}"] for s in range(1, 6)] == pytest.approx(tables["answer b"])
    # the failed generation is not sent to the judge and keeps its status
    assert [rows["c", m]["status"] for m in ("judge_helpfulness", "judge_helpfulness_expected")] == ["empty_output"] * 2
    assert rows["c", "judge_helpfulness"]["p1"] is None

    # one scoring call: five pairs per verdict, after the formatted prompt, the feedback and " [RESULT] "
    assert judge.calls == 1 and len(judge.pairs) == 10
    prompt_b = judge_prompt("Qb?", "answer b", "ref b", rubric_text("helpfulness")[1])
    assert judge.pairs[5:] == [
        (f"<user>{prompt_b}<assistant>It names the drug but [RESULT] ", str(s)) for s in range(1, 6)
    ]
    assert judge.pairs[0][0].endswith("<assistant>Correct and complete. [RESULT] ")


class NoLogprobsFormatter(ScoringJudge):
    """A judge that formats prompts but declares no prompt log-probabilities, as a generation-only backend does."""

    capabilities = Capabilities(prompt_logprobs=False, top_logprobs=False, chat_template=True, max_gpus=0)

    def loglikelihood(self, pairs):
        raise AssertionError("never asked: its capabilities say it has no prompt log-probabilities")


def test_a_judge_without_prompt_logprobs_has_no_distribution(frames):
    samples, generations = frames
    judge = NoLogprobsFormatter({"answer a": "[RESULT] 5", "answer b": "no score"}, {})
    assert score_distributions(judge, ["p"], ["o"]) is None
    scores = score_judge(judge, samples, generations, {"rubrics": ["honesty"], "retries": 0})
    assert scores.filter(pl.col("id") != "c")["status"].to_list() == ["ok", "no_logprobs", "parse_error", "no_logprobs"]


def _api_judge(server, top_logprobs: bool) -> OpenAICompatBackend:
    return OpenAICompatBackend(
        "api-judge",
        "gpt-x",
        base_url=server.base_url,
        api_key_env="CAREVAL_TEST_KEY",
        settings={"top_logprobs": top_logprobs, "backoff": 0},
    )


def test_openai_compatible_judge_falls_back_to_parse_and_retries(frames, monkeypatch, capsys):
    """A chat API that returns no log-probabilities: verdicts parsed from the text, retried with a seed per attempt."""
    samples, generations = frames
    monkeypatch.setenv("CAREVAL_TEST_KEY", "EMPTY")
    asked: list[tuple[str, int]] = []
    answers = {"answer a": ["thinking", "Right. [RESULT] 5"], "answer b": ["no verdict"] * 3}

    def respond(body, headers):
        response = ScoringJudge.response(body["messages"][-1]["content"])
        asked.append((response, body["seed"]))
        return 200, json.dumps({"choices": [{"message": {"content": answers[response].pop(0)}}]}).encode()

    with FakeOpenAIServer(respond) as server:
        judge = _api_judge(server, top_logprobs=False)
        with pytest.raises(CapabilityError, match=r"^backend openai has no prompt log-probabilities"):
            judge.loglikelihood([("x", "1")])
        scores = score_judge(judge, samples, generations, {"rubrics": ["reasoning"], "retries": 2, "seed": 10})
    rows = {(r["id"], r["metric"]): (r["value"], r["status"]) for r in scores.iter_rows(named=True)}
    assert rows["a", "judge_reasoning"] == (5.0, "ok")
    assert math.isnan(rows["b", "judge_reasoning"][0]) and rows["b", "judge_reasoning"][1] == "parse_error"
    for sample in ("a", "b"):
        value, status = rows[sample, "judge_reasoning_expected"]
        assert math.isnan(value) and status == "no_logprobs"
    # the retries still run: b asked three times, a twice, each attempt with its own seed (seed + attempt, made one
    # per prompt: careval.backends.tokenization.request_seeds)
    assert sorted(a for a, _ in asked) == ["answer a"] * 2 + ["answer b"] * 3
    assert len({seed for a, seed in asked if a == "answer b"}) == 3
    log = capsys.readouterr().out
    assert "api-judge gives no log-probabilities" in log
    assert "judge_reasoning: statuses {'ok': 1, 'parse_error': 1}" in log
    assert "judge_reasoning_expected: statuses {'no_logprobs': 2}" in log


def test_a_chat_api_judge_reads_its_distribution_from_top_logprobs(frames, monkeypatch):
    """Where the chat API returns top_logprobs, the score token's alternatives are the distribution (an unparseable
    verdict then takes its most likely score, as on a local judge)."""
    samples, generations = frames
    monkeypatch.setenv("CAREVAL_TEST_KEY", "EMPTY")
    top = {" 4": math.log(0.5), " 5": math.log(0.3), " 3": math.log(0.2)}
    tokens = ["Good", " answer", ". [RESULT]", " 4"]

    def respond(body, headers):
        assert body["logprobs"] is True and body["top_logprobs"] == 5
        steps = [{"token": t, "logprob": -0.1, "top_logprobs": []} for t in tokens[:-1]]
        steps.append(
            {
                "token": " 4",
                "logprob": math.log(0.5),
                "top_logprobs": [{"token": k, "logprob": v} for k, v in top.items()],
            }
        )
        message = {"content": "".join(tokens)}
        return 200, json.dumps({"choices": [{"message": message, "logprobs": {"content": steps}}]}).encode()

    with FakeOpenAIServer(respond) as server:
        scores = score_judge(_api_judge(server, top_logprobs=True), samples, generations, {"rubrics": ["reasoning"]})
    rows = {(r["id"], r["metric"]): r for r in scores.iter_rows(named=True)}
    assert (rows["a", "judge_reasoning"]["value"], rows["a", "judge_reasoning"]["status"]) == (4.0, "ok")
    expected = rows["a", "judge_reasoning_expected"]
    assert expected["status"] == "ok" and expected["value"] == pytest.approx(3 * 0.2 + 4 * 0.5 + 5 * 0.3)
    assert [expected[f"p{s}"] for s in range(1, 6)] == pytest.approx([0, 0, 0.2, 0.5, 0.3])


def test_a_custom_rubric_may_not_end_in_expected():
    custom = {"name": "safety_expected", "criteria": "Safe?", **{f"score{i}_description": "x" for i in range(1, 6)}}
    with pytest.raises(JudgeConfigError, match="'safety_expected' must not end in '_expected'"):
        rubric_text(custom)


# ---------------------------------------------------------------- the real demo judge


DEMO_JUDGE = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def smollm2(demo_model_dirs, demo_config):
    from dataclasses import replace

    from careval.backends import load_backend
    from careval.models.spec import model_spec

    spec = model_spec(DEMO_JUDGE, demo_config["models"][DEMO_JUDGE], models_dir=demo_model_dirs[DEMO_JUDGE].parent)
    return load_backend(replace(spec.for_job(), system_prompt=pe_prompts.ABS_SYSTEM_PROMPT, dtype="float32"))


def real_case():
    samples = pl.DataFrame(
        {
            "id": ["a", "b"],
            "reference": [
                "Intramuscular adrenaline (epinephrine) into the outer thigh.",
                "Metformin reduces glucose production by the liver.",
            ],
        }
    )
    generations = pl.DataFrame(
        {
            "id": ["a", "b"],
            "prompt": ["What is the first-line treatment for anaphylaxis?", "How does metformin lower blood glucose?"],
            "output": ["Give adrenaline intramuscularly.", "It makes the pancreas secrete more insulin."],
            "status": ["ok", "ok"],
        }
    )
    return samples, generations


def plain_forward_logliks(model_dir, context: str) -> list[float]:
    """log P(" n" | context) for n = 1..5 with transformers alone: the context's chat text is encoded
    as-is (its <|im_start|> markers are the special tokens), then one forward per score."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    assert context.endswith("[RESULT] ")
    head = tokenizer(context[:-1])["input_ids"]
    logliks = []
    for score in "12345":
        ids = tokenizer(context + score)["input_ids"]
        assert ids[: len(head)] == head  # the score's tokens (a space, then the digit) follow the context's
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
        logliks.append(sum(float(logp[pos - 1, ids[pos]]) for pos in range(len(head), len(ids))))
    return logliks


class Recording(Backend):
    """The backend, with every generated verdict kept (the job itself does not return the judge's text)."""

    def __init__(self, inner):
        self.inner, self.outputs = inner, {}
        self.name, self.backend, self.capabilities = inner.name, inner.backend, inner.capabilities

    def generate(self, prompts, sampling, instruction=None):
        outputs = self.inner.generate(prompts, sampling, instruction)
        self.outputs.update(zip(prompts, outputs))  # a retry overwrites: the last verdict is the one scored
        return outputs

    def format(self, prompt, instruction=None):
        return self.inner.format(prompt, instruction)

    def loglikelihood(self, pairs):
        return self.inner.loglikelihood(pairs)


@pytest.mark.slow
def test_expected_score_of_the_demo_judge_equals_a_hand_computation(smollm2, demo_model_dirs):
    samples, generations = real_case()
    judge = Recording(smollm2)
    scores = score_judge(
        judge, samples, generations, {"rubrics": ["factual_validity"], "retries": 0, "max_new_tokens": 40}
    )
    assert set(scores["status"]) <= {"ok", "from_distribution"}  # every verdict gets a number
    rubric = rubric_text("factual_validity")[1]
    rows = scores.rows(named=True)
    for (record, reference), grade, expected in zip(
        zip(generations.iter_rows(named=True), samples["reference"]), rows[::2], rows[1::2]
    ):
        assert grade["id"] == expected["id"] == record["id"]
        prompt = judge_prompt(record["prompt"], record["output"], reference, rubric)
        output = judge.outputs[prompt]
        context = smollm2.format(prompt) + scoring_context("", output)
        assert context.startswith("<|im_start|>system\n" + pe_prompts.ABS_SYSTEM_PROMPT)
        logliks = plain_forward_logliks(demo_model_dirs[DEMO_JUDGE], context)
        weights = [math.exp(x) for x in logliks]
        by_hand = [w / sum(weights) for w in weights]
        assert [expected[f"p{s}"] for s in range(1, 6)] == pytest.approx(by_hand, abs=1e-5)
        assert expected["value"] == pytest.approx(sum(s * p for s, p in zip(range(1, 6), by_hand)), abs=1e-5)
        assert 1.0 <= expected["value"] <= 5.0 and expected["status"] == "ok"
        if grade["status"] == "from_distribution":
            assert grade["value"] == 1 + max(range(5), key=lambda i: by_hand[i])
        print(
            f"demo judge on {record['id']}: grade {grade['value']} ({grade['status']}), "
            f"expected {expected['value']:.3f}, p = {[round(p, 3) for p in by_hand]}, verdict end {output[-60:]!r}"
        )


class FakeVLLM:
    """vllm.LLM.generate for prompt-logprob requests, answered by a transformers model on the token ids."""

    def __init__(self, model):
        self.model = model
        self.requests = []

    def generate(self, prompts, params, use_tqdm=True):
        import torch

        self.requests.append((prompts, params))
        outputs = []
        for prompt in prompts:
            ids = prompt["prompt_token_ids"]
            with torch.no_grad():
                logp = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
            # vLLM: None for the first prompt token, then {token_id: Logprob} per position
            entries = [None] + [
                {tok: SimpleNamespace(logprob=float(logp[i - 1, tok]))} for i, tok in enumerate(ids) if i
            ]
            outputs.append(SimpleNamespace(prompt_logprobs=entries, outputs=[]))
        return outputs


@pytest.mark.slow
def test_vllm_path_on_a_fake_engine_gives_the_hf_distribution(smollm2):
    from careval.backends.vllm import VLLMBackend

    backend = object.__new__(VLLMBackend)  # no engine: the scoring path with the same tokenizer and weights
    backend.llm = FakeVLLM(smollm2.model)
    backend._SamplingParams = lambda **kwargs: SimpleNamespace(**kwargs)
    backend.tokenizer = smollm2.tokenizer
    backend.add_bos = smollm2.add_bos
    backend.max_length = smollm2.max_length
    backend.chat_template = smollm2.chat_template
    backend.system_prompt = smollm2.system_prompt
    rubric = rubric_text("helpfulness")[1]
    prompts = [
        judge_prompt("What lowers fever?", "Paracetamol.", "Paracetamol or ibuprofen.", rubric),
        judge_prompt("What lowers fever?", "Antibiotics.", "Paracetamol or ibuprofen.", rubric),
    ]
    outputs = ["The response is correct and short. [RESULT] 5", "The response is wrong because"]
    via_vllm = score_distributions(backend, prompts, outputs)
    via_hf = score_distributions(smollm2, prompts, outputs)
    assert len(backend.llm.requests) == 1 and len(backend.llm.requests[0][0]) == 10  # five requests per verdict
    assert backend.llm.requests[0][1].prompt_logprobs == 0
    for got, want in zip(via_vllm, via_hf):
        assert got == pytest.approx(want, abs=1e-5)
        assert expected_score(got) == pytest.approx(expected_score(want), abs=1e-5)
        assert most_likely(got) == most_likely(want)
    assert via_hf[0] != pytest.approx(via_hf[1], abs=1e-3)  # two different verdicts, two distributions
