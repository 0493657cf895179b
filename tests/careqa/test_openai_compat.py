"""The OpenAI-compatible client against a fake /v1/chat/completions server on localhost."""

from __future__ import annotations

import json

import pytest

from careval.backends import CapabilityError, Sampling, load_backend
from careval.backends.openai import EndpointError, OpenAICompatBackend
from careval.models.spec import endpoint_spec
from support.fake_openai import FakeOpenAIServer


def _fixed(payload: object):
    """A responder answering every request with `payload` (a malformed or null reply)."""
    return lambda body, headers: (200, json.dumps(payload).encode())


@pytest.fixture(autouse=True)
def _default_key(monkeypatch):
    # the backend refuses to start without the key its api_key_env names (tests/reliability checks that)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-test-key")


def _backend(server, system_prompt=None, **endpoint) -> OpenAICompatBackend:
    """The backend of an endpoint spec (as a CareQA step's `endpoint:` gives it), at the fake server."""
    spec = endpoint_spec(
        "gpt", {"model": "gpt-4", "base_url": server.base_url, "concurrency": 3, **endpoint}, system_prompt
    )
    backend = load_backend(spec)
    assert isinstance(backend, OpenAICompatBackend) and backend.concurrency == 3
    return backend


def test_generate_sends_chat_requests_and_keeps_prompt_order(monkeypatch):
    monkeypatch.setenv("CAREVAL_TEST_KEY", "sk-test")
    prompts = [f"prompt number {i}" for i in range(7)]
    with FakeOpenAIServer() as server:
        backend = _backend(server, api_key_env="CAREVAL_TEST_KEY", system_prompt="Translate.")
        outputs = backend.generate(prompts, Sampling(max_new_tokens=20, stop=("9",)))
    # The fake replies with the reversed prompt; the client cuts at the stop string "9" (none here).
    assert outputs == [p[::-1] for p in prompts]
    assert len(server.requests) == 7
    first = next(r for r in server.requests if r["messages"][-1]["content"] == "prompt number 0")
    assert first["path"] == "/v1/chat/completions"
    assert first["model"] == "gpt-4"
    assert first["messages"] == [
        {"role": "system", "content": "Translate."},
        {"role": "user", "content": "prompt number 0"},
    ]
    assert first["max_tokens"] == 20 and first["temperature"] == 0.0 and first["stop"] == ["9"]
    assert "top_p" not in first  # greedy: no nucleus setting sent
    assert all(h.get("Authorization") == "Bearer sk-test" for h in server.headers)


def test_a_tasks_instruction_is_the_system_turn_after_the_system_prompt():
    """As a local chat template gets it (careval.backends.chat.format_prompt, lm-eval's join: tests/backends/test_chat.py)."""
    instruction = "Instructions: answer briefly.\n"
    with FakeOpenAIServer() as server:
        _backend(server, system_prompt="You are a clinician.").generate(["q?"], Sampling(), instruction)
        _backend(server).generate(["q?"], Sampling(), instruction)
    user = {"role": "user", "content": "q?"}
    assert [r["messages"] for r in server.requests] == [
        [{"role": "system", "content": "You are a clinician.\n\nInstructions: answer briefly.\n"}, user],
        [{"role": "system", "content": instruction}, user],
    ]


def test_stop_string_is_cut_client_side():
    with FakeOpenAIServer() as server:
        outputs = _backend(server).generate(["abc|def"], Sampling(stop=("|",)))
    # reversed "fed|cba", cut before "|"
    assert outputs == ["fed"]


def test_transient_errors_are_retried():
    with FakeOpenAIServer(failures_before_success=2, failure_status=503) as server:
        assert _backend(server, backoff=0).generate(["xy"], Sampling()) == ["yx"]
    assert len(server.requests) == 3


def test_client_errors_stop_with_one_line():
    with FakeOpenAIServer(failures_before_success=5, failure_status=401) as server:
        with pytest.raises(EndpointError, match=r"/v1/chat/completions: HTTP 401 for model 'gpt-4'") as caught:
            _backend(server, backoff=0).generate(["xy"], Sampling())
    assert len(server.requests) == 1  # 401 is not retried
    assert "\n" not in str(caught.value)


def test_malformed_and_null_replies():
    # A reply that stays malformed through the retries is the request's status, counted per sample, not a crash.
    with FakeOpenAIServer(_fixed({"unexpected": 1})) as server:
        backend = _backend(server, backoff=0, max_retries=2)
        assert backend.generate(["q"], Sampling()) == [""]
        assert backend.last_status == ["malformed_reply"]
    assert len(server.requests) == 3
    assert backend.client.counts.retries == {"malformed": 2} and backend.client.counts.failed == {"malformed_reply": 1}
    # A null content (refusal, content filter) is an empty output for the caller to count.
    with FakeOpenAIServer(_fixed({"choices": [{"message": {"content": None}}]})) as server:
        assert _backend(server).generate(["q"], Sampling()) == [""]


def test_unreachable_endpoint():
    backend = OpenAICompatBackend("gpt", "gpt-4", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(EndpointError, match="unreachable"):
        backend.generate(["q"], Sampling())


def test_scoring_is_refused_in_one_line_its_capabilities_announce():
    backend = OpenAICompatBackend("gpt", "gpt-4", base_url="http://127.0.0.1:9/v1")
    assert not backend.capabilities.prompt_logprobs
    with pytest.raises(CapabilityError, match=r"^backend openai has no prompt log-probabilities"):
        backend.loglikelihood([("a", "b")])
