"""load_backend: backends registered by name, built from the typed model spec; lazy torch and vLLM imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from careval.backends import Backend, Capabilities, load_backend, register_backend
from careval.backends.hf.backend import HFBackend
from careval.backends.registry import UnknownBackendError, capabilities, spec_capabilities
from careval.models.spec import endpoint_spec
from support.specs import local_model_spec
from support.threads import torch_threads

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def test_an_hf_spec_builds_an_hf_backend(tiny_model_dir):
    with torch_threads():
        backend = load_backend(local_model_spec("tiny", tiny_model_dir, dtype="float32", threads=1, batch_size=4))
        assert torch.get_num_threads() == 1  # the job's threads
    assert isinstance(backend, HFBackend) and isinstance(backend, Backend)
    assert backend.name == "tiny" and backend.batch_size == 4
    assert backend.max_length == 128  # from the config's max_position_embeddings
    assert backend.model.dtype == torch.float32 and not backend.model.training
    assert backend.add_bos is None  # lm-eval 0.4.13: the tokenizer's own default
    assert backend.capabilities == capabilities("hf") and backend.gpus == 0


def test_the_entry_sets_the_context_window_and_the_dtype(tiny_model_dir):
    backend = load_backend(local_model_spec("t", tiny_model_dir, max_length=32, dtype="auto"))
    assert backend.max_length == 32
    assert backend.model.dtype == torch.float32  # "auto" keeps the checkpoint's dtype


def test_keys_left_out_take_the_config_schemas_defaults(tiny_model_dir):
    """The schema is the one home of a model entry's defaults (float32, batch 8, no chat template)."""
    from careval.schema import with_schema_defaults

    defaults = with_schema_defaults({}, "model")
    backend = load_backend(local_model_spec("t", tiny_model_dir))
    assert (backend.batch_size, backend.chat_template) == (defaults["batch_size"], defaults["chat_template"])
    assert str(backend.model.dtype) == f"torch.{defaults['dtype']}"


def test_an_unknown_backend_or_dtype_is_one_line(tiny_model_dir):
    from dataclasses import replace

    spec = local_model_spec("x", tiny_model_dir)
    with pytest.raises(UnknownBackendError, match="no backend named 'onnx' is registered"):
        load_backend(replace(spec, backend="onnx"))
    with pytest.raises(ValueError, match="dtype"):
        load_backend(replace(spec, dtype="int3"))


def test_every_backend_of_the_schema_is_registered_by_its_module():
    """A model entry's `backend:` names a module of careval.backends, which registers it (adding one: README)."""
    schema = yaml.safe_load(SCHEMA.read_text())
    names = schema["$defs"]["model"]["properties"]["backend"]["enum"]
    for name in [*names, "openai"]:  # openai: the CareQA steps' endpoints (careval.models.spec.endpoint_spec)
        assert isinstance(capabilities(name), Capabilities), name
    # openai: the most a served model can do; each entry's API says what it does (careval.backends.openai)
    chat = endpoint_spec("gpt", {"model": "gpt-4"})
    completions = endpoint_spec("ft", {"model": "ft", "api": "completions"}, entry={"endpoint": {}})
    assert not spec_capabilities(chat).prompt_logprobs and spec_capabilities(completions).prompt_logprobs
    assert capabilities("hf").max_gpus == 1


def test_a_backend_registered_elsewhere_is_built_from_the_spec(tiny_model_dir):
    """Registering is one decorator: the registry builds it from the typed spec, no if-chain to extend."""
    from dataclasses import replace

    @register_backend("echo_test", Capabilities(False, False, False, 0))
    class Echo(Backend):
        backend, capabilities = "echo_test", Capabilities(False, False, False, 0)

        def __init__(self, spec):
            self.name, self.max_length = spec.name, 64

        def generate(self, prompts, sampling, instruction=None):
            return list(prompts)

    backend = load_backend(replace(local_model_spec("e", tiny_model_dir), backend="echo_test"))
    assert isinstance(backend, Echo) and backend.generate(["a"], None) == ["a"]  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match=r"^backend echo_test has no prompt log-probabilities"):
        backend.loglikelihood([("a", "b")])


def test_vllm_without_vllm_is_a_one_line_install_hint(tiny_model_dir, monkeypatch):
    from dataclasses import replace

    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail, installed or not
    with pytest.raises(ImportError) as info:
        load_backend(replace(local_model_spec("x", tiny_model_dir), backend="vllm"))
    message = str(info.value)
    assert "\n" not in message
    assert "pip install -e .[gpu]" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_registering_the_backends_imports_neither_vllm_nor_torch():
    code = (
        "import sys, careval.backends\n"
        "from careval.backends.registry import capabilities\n"
        "[capabilities(name) for name in ('hf', 'vllm', 'openai')]\n"
        "print('vllm' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_model_folder_with_a_broken_config_json_is_one_line_naming_the_file(tiny_model_dir, tmp_path):
    import shutil

    from careval.backends.hf.loading import ModelFolderError

    folder = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "config.json").write_text('{"model_type": "llama",')  # cut short, as by a full disk or a bad copy
    with pytest.raises(ModelFolderError) as error:
        load_backend(local_model_spec("t", folder))
    message = str(error.value)
    assert message.startswith(f"{folder / 'config.json'}: not valid JSON (Expecting property name")
    assert "\n" not in message and "line 1 column" in message
