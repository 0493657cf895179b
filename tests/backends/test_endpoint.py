"""A served model's entry, plan-time refusal, transport rules, budget ledger, the judge's top_logprobs and the estimate,
fast (no vLLM: a fake completions server on loopback where a server is needed; test_endpoint_vllm.py runs the real
one)."""

from __future__ import annotations

import json
import math
import threading
from email.utils import formatdate

import pytest
import yaml

from careval.backends import Sampling
from careval.backends.base import TopStep
from careval.backends.budget import BudgetExceeded, Ledger
from careval.backends.http_client import Policy, RateLimit, backoff_delay, retry_after
from careval.config import ConfigError
from careval.metrics.judge_distribution import top_distribution
from careval.models.spec import model_spec
from careval.plan import build_plan
from support.fake_openai import FakeOpenAIServer


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("3") == 3.0 and retry_after(" 1.5 ") == 1.5 and retry_after(None) is None
    assert retry_after("soon") is None
    assert abs(retry_after(formatdate(1_000_030, usegmt=True), now=1_000_000) - 30) < 1e-6


def test_backoff_doubles_with_equal_jitter_up_to_the_cap():
    policy = Policy(backoff=1.0, max_backoff=10.0)
    assert [backoff_delay(k, policy, lambda: 0.0) for k in range(5)] == [0.5, 1.0, 2.0, 4.0, 5.0]
    assert [backoff_delay(k, policy, lambda: 1.0) for k in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_rate_limit_holds_the_request_that_would_pass_a_minutes_limit():
    now = [0.0]
    limit = RateLimit(requests=2, tokens=100, clock=lambda: now[0])
    assert limit.acquire(40) == 0.0 and limit.acquire(40) == 0.0
    waiter = threading.Thread(target=limit.acquire, args=(10,))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # a third request in the same minute waits
    now[0] = 61.0
    waiter.join(5)
    assert not waiter.is_alive()


def test_the_ledger_holds_settles_and_refuses_past_the_budget(tmp_path):
    clock = [100.0]
    ledger = Ledger(tmp_path / "spent" / "gpt.jsonl", 1.0, "models.gpt", hold_s=60, clock=lambda: clock[0])
    first = ledger.reserve(0.4)
    other = Ledger(tmp_path / "spent" / "gpt.jsonl", 1.0, "models.gpt", hold_s=60, clock=lambda: clock[0])
    assert other.spent() == pytest.approx(0.4)  # another job sees the hold
    ledger.settle(first, 0.25)
    second = other.reserve(0.5)
    with pytest.raises(BudgetExceeded) as stopped:
        ledger.reserve(0.5)  # 0.25 paid + 0.5 held + 0.5 > 1
    assert str(stopped.value) == (
        "models.gpt.max_cost: stopped before the budget is crossed: spent 0.7500 of 1 (the next request may cost up to "
        "0.5000); every answered request is in the request cache: raise max_cost and rerun to go on"
    )
    clock[0] = 200.0  # a job killed with `second` in flight: its hold lapses
    assert ledger.spent() == pytest.approx(0.25)
    other.settle(second, 0.1)
    assert Ledger(tmp_path / "spent" / "gpt.jsonl", 1.0, "m", 60).spent() == pytest.approx(0.35)


def test_the_judges_distribution_from_top_logprobs():
    steps = [TopStep("Feedback", {}), TopStep(" good [RES", {}), TopStep("ULT]", {}), TopStep(" 4", {})]
    steps[-1] = TopStep(" 4", {" 4": math.log(0.6), "4": math.log(0.1), " 5": math.log(0.2), " the": math.log(0.1)})
    probs = top_distribution(steps)
    assert probs == pytest.approx([0, 0, 0, 0.7 / 0.9, 0.2 / 0.9])
    assert top_distribution(steps[:3]) is None  # no score token after [RESULT]
    assert top_distribution([TopStep("no verdict", {"1": 0.0})]) is None


def _config(models: dict, **extra) -> dict:
    return {
        "models": models,
        "benchmarks": {"demo_mcqa": {"limit": 4}, "demo_open_qa": {"limit": 4}},
        "metrics": {"skip": ["bleurt", "judge", "bertscore", "moverscore"]},
        "analysis": {"model_sets": {"demo": list(models)}, "resilience": {"benchmarks": []}, "consistency": {"r": 0}},
        **extra,
    }


CHAT = {"endpoint": {"base_url": "http://127.0.0.1:9/v1", "model": "gpt-x", "api": "chat"}}


def test_a_family_the_endpoint_cannot_serve_is_refused_at_plan_time_in_one_line():
    with pytest.raises(ConfigError) as refused:
        build_plan(_config({"gpt-x": CHAT}))
    assert str(refused.value) == (
        "models.gpt-x: backend openai (the chat API of gpt-x) has no prompt log-probabilities: accuracy needs them "
        "(on demo_mcqa)"
    )
    # a chat-only API runs the generation families (here: n-grams of the open benchmark)
    config = _config({"gpt-x": CHAT}, benchmarks={"demo_open_qa": {"limit": 4}})
    config["metrics"]["skip"] += ["perplexity", "relaxed_perplexity"]
    plan = build_plan(config)
    assert plan.models["gpt-x"].gpus == 0 and plan.models["gpt-x"].backend == "openai"
    assert "rouge" in plan.families("demo_open_qa")
    # the completions API has prompt log-probabilities: every family plans
    completions = {"endpoint": {**CHAT["endpoint"], "api": "completions"}}
    assert build_plan(_config({"ft": completions})).models["ft"].weights == (
        "endpoint:completions|http://127.0.0.1:9/v1|gpt-x|tokenizer=server"
    )


def test_an_entry_names_source_or_endpoint_and_no_local_setting():
    with pytest.raises(ConfigError, match=r"models\.x: set one of source, endpoint \(source and endpoint are both set"):
        build_plan(_config({"x": {**CHAT, "source": "hf:a/b"}}))
    with pytest.raises(ConfigError, match=r"models\.x\.vllm_args: not a setting of a served model"):
        build_plan(_config({"x": {**CHAT, "vllm_args": {"a": 1}}}))
    with pytest.raises(ConfigError, match=r"models\.x\.max_cost: needs a price"):
        model_spec("x", {**CHAT, "max_cost": 3}, models_dir="m")


def test_generation_with_a_malformed_reply_is_a_counted_status_and_not_cached(tmp_path, monkeypatch):
    """Through the job's backend (careval.backends.cached): a request still malformed after its retries is the
    sample's status; the call is not kept, so a rerun asks again; an answered request is kept as it arrives."""
    from careval.backends.cached import CachedBackend

    monkeypatch.setenv("K", "sk-x")
    healed = {"now": False}

    def respond(body, headers):
        if "bad" in body["messages"][-1]["content"] and not healed["now"]:
            return 200, b'{"choices": [{"message": {"content": "cut'
        reply = {"choices": [{"message": {"content": "fine"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}
        return 200, json.dumps(reply).encode()

    with FakeOpenAIServer(respond) as server:
        entry = {"endpoint": {"base_url": server.base_url, "model": "m", "api_key_env": "K", "max_retries": 1}}
        entry["endpoint"]["backoff"] = 0
        resources = {"cache_dir": str(tmp_path / "cache")}
        spec = model_spec(
            "m", entry | {"price": {"input_per_mtok": 1e6, "output_per_mtok": 2e6}}, models_dir=".", resources=resources
        )
        with CachedBackend(spec, spec.cache_dir) as backend:
            assert backend.generate(["good", "bad"], Sampling()) == ["fine", ""]
            assert backend.last_status == ["ok", "malformed_reply"]
        assert len(server.requests) == 3  # good once, bad twice (one retry)
        healed["now"] = True
        with CachedBackend(spec, spec.cache_dir) as backend:
            assert backend.generate(["good", "bad"], Sampling()) == ["fine", "fine"]
            assert backend.hits == 1 and backend.computed == 1  # "good" came from the request cache
            assert backend.computed_tokens[:2] == (7, 2)  # only the request sent again was paid


def test_careval_estimate_prints_each_served_models_requests_tokens_and_cost(tmp_path, capsys):
    from careval.cli import main

    entry = {**CHAT, "price": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}, "max_cost": 40}
    config = _config({"gpt-x": entry}, benchmarks={"demo_open_qa": {"limit": 5}})
    config["metrics"]["skip"] += ["perplexity", "relaxed_perplexity"]
    config["datasets_dir"] = str(tmp_path / "none")
    config["generation"] = {"max_new_tokens": 100}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["estimate", str(path), "--prompt-tokens", "200"]) == 0
    out = capsys.readouterr().out
    assert (
        "gpt-x: the chat API of gpt-x at http://127.0.0.1:9/v1; price 2.5 / 10 per million tokens, max_cost 40" in out
    )
    # 5 generations (the limit; not normalised): 5 x 200 prompt tokens, at most 5 x 100 generated
    row = next(line for line in out.splitlines() if line.strip().startswith("demo_open_qa"))
    assert row.split()[2:6] == ["~5", "~1000", "~500", "~0.01"]  # 1000 * 2.5e-6 + 500 * 1e-5 = 0.0075


def test_a_study_sweeps_a_served_models_endpoint_settings():
    """A study of section model sweeps `endpoint.<key>` like any model setting: each variant is the served model at
    another setting (here its API), a job of its own."""
    entry = {"endpoint": {**CHAT["endpoint"], "api": "completions"}}
    config = _config({"ft": entry}, benchmarks={"demo_open_qa": {"limit": 4}})
    config["studies"] = {"api": {"sweep": {"model": {"endpoint.model": ["gpt-x", "gpt-y"]}}}}
    plan = build_plan(config)
    variants = plan.studies["api"].variants
    served = {name: v.plan.models["ft"].path for name, v in variants.items()}
    assert sorted(set(served.values())) == ["gpt-x", "gpt-y"]  # the baseline (the run's gpt-x) and the two settings


def test_a_dry_run_prints_one_line_per_served_model(tmp_path):
    from careval.estimate import dry_run, summary

    assert dry_run(["snakemake", "-n"]) and dry_run(["snakemake", "--cores", "2", "-np"])
    assert dry_run(["snakemake", "--dry-run", "all"]) and dry_run(["snakemake", "--dryrun"])
    assert not dry_run(["snakemake", "--cores", "2", "-p"]) and not dry_run(["snakemake", "-j", "4", "--notemp"])
    entry = {**CHAT, "price": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}, "max_cost": 40}
    config = _config({"gpt-x": entry}, benchmarks={"demo_open_qa": {"limit": 5}})
    config["metrics"]["skip"] += ["perplexity", "relaxed_perplexity"]
    config["datasets_dir"] = str(tmp_path / "none")
    config["generation"] = {"max_new_tokens": 100}
    config["resources"] = {"cache_dir": str(tmp_path / "cache")}
    # 5 generations (the limit; not normalised) of 200 prompt tokens, at most 100 generated each:
    # 1000 * 2.5e-6 + 500 * 1e-5 = 0.0075; nothing spent yet
    assert summary(build_plan(config), prompt_tokens=200) == [
        "gpt-x (chat API of gpt-x): ~5 requests, ~1000 prompt tokens, at most ~500 generated, at most ~0.01 "
        "(max_cost 40, spent 0.0000)"
    ]
    config["models"]["gpt-x"]["max_cost"] = 0.005  # less than the 0.0075 it may cost
    assert summary(build_plan(config), prompt_tokens=200)[0].endswith(
        "(max_cost 0.005, spent 0.0000: more than max_cost, its jobs stop there)"
    )
