"""load_backend: spec handling, lazy vLLM import."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from careval.backends import Backend, load_backend
from careval.backends.hf import HFBackend


def test_hf_spec_builds_an_hf_backend(tiny_model_dir):
    before = torch.get_num_threads()
    try:
        backend = load_backend(
            {
                "name": "tiny",
                "backend": "hf",
                "path": str(tiny_model_dir),
                "dtype": "float32",
                "threads": 1,
                "batch_size": 4,
                "family": "ignored-extra-key",
            }
        )
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert isinstance(backend, HFBackend) and isinstance(backend, Backend)
    assert backend.name == "tiny" and backend.batch_size == 4
    assert backend.max_length == 128  # from the config's max_position_embeddings
    assert backend.model.dtype == torch.float32 and not backend.model.training
    assert backend.add_bos is None  # lm-eval 0.4.13: the tokenizer's own default


def test_spec_overrides(tiny_model_dir):
    backend = load_backend(
        {"name": "t", "path": str(tiny_model_dir), "max_length": 32, "add_bos_token": False, "dtype": "auto"}
    )
    assert backend.max_length == 32 and backend.add_bos is False
    assert backend.model.dtype == torch.float32  # "auto" keeps the checkpoint's dtype


def test_keys_left_out_take_the_config_schemas_defaults(tiny_model_dir):
    """The schema is the one home of a model entry's defaults (float32, batch 8, no chat template)."""
    from careval.schema import with_schema_defaults

    defaults = with_schema_defaults({}, "model")
    backend = load_backend({"name": "t", "path": str(tiny_model_dir)})
    assert (backend.batch_size, backend.chat_template) == (defaults["batch_size"], defaults["chat_template"])
    assert str(backend.model.dtype) == f"torch.{defaults['dtype']}"


def test_bad_specs(tiny_model_dir):
    with pytest.raises(ValueError, match="lacks path"):
        load_backend({"name": "x", "backend": "hf"})
    with pytest.raises(ValueError, match="backend must be one of"):
        load_backend({"name": "x", "path": str(tiny_model_dir), "backend": "onnx"})
    with pytest.raises(ValueError, match="dtype"):
        load_backend({"name": "x", "path": str(tiny_model_dir), "dtype": "int3"})


def test_vllm_without_vllm_is_a_one_line_install_hint(tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail, installed or not
    with pytest.raises(ImportError) as info:
        load_backend({"name": "x", "backend": "vllm", "path": str(tiny_model_dir)})
    message = str(info.value)
    assert "\n" not in message
    assert "pip install -e .[gpu]" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_importing_the_package_does_not_import_vllm_or_torch():
    code = "import sys, careval.backends, careval.backends.vllm; print('vllm' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_model_folder_with_a_broken_config_json_is_one_line_naming_the_file(tiny_model_dir, tmp_path):
    import shutil

    from careval.backends.hf import ModelFolderError

    folder = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "config.json").write_text('{"model_type": "llama",')  # cut short, as by a full disk or a bad copy
    with pytest.raises(ModelFolderError) as error:
        load_backend({"name": "t", "path": str(folder)})
    message = str(error.value)
    assert message.startswith(f"{folder / 'config.json'}: not valid JSON (Expecting property name")
    assert "\n" not in message and "line 1 column" in message
