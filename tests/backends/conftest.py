"""Fixtures for the backend tests: a tiny random Llama with a byte-level BPE tokenizer built
offline (no hub), the path of the real SmolLM2 folder when it exists, and vLLM's OpenAI-compatible server on it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from openai_server import MODEL, OpenAIServer

from support.tiny_models import CHATML, build_llama
from vllm_worker.client import vllm_python

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A 2-layer, hidden-32 random Llama (float32 safetensors) and its tokenizer; no chat template."""
    sizes = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2)
    return build_llama(tmp_path_factory.mktemp("tiny-llama"), **sizes, max_position_embeddings=128)


@pytest.fixture(scope="session")
def tiny_chat_dir(tiny_model_dir, tmp_path_factory) -> Path:
    """The tiny model with a ChatML chat template."""
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("tiny-llama-chat") / "model"
    shutil.copytree(tiny_model_dir, out)
    tok = AutoTokenizer.from_pretrained(out)
    tok.chat_template = CHATML
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    """The tiny model loaded independently of the backend (the reference for direct computations)."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()


@pytest.fixture(scope="session")
def make_hf(tiny_model_dir):
    """Factory: an HFBackend over the tiny model, its keyword arguments overridable (HFBackend.load)."""
    from careval.backends.hf.backend import HFBackend

    def make(**overrides):
        return HFBackend.load("tiny", str(tiny_model_dir), **{"dtype": "float32", "batch_size": 1, **overrides})

    return make


@pytest.fixture(scope="session")
def smollm2_dir(demo_model_dirs) -> Path:
    # prepared on first use (tests/conftest.py), so a fresh clone runs these tests instead of skipping
    return demo_model_dirs["smollm2-135m-instruct"]


@pytest.fixture(scope="session")
def gemma_dir(demo_model_dirs) -> Path:
    return demo_model_dirs["gemma3-270m"]


@pytest.fixture(scope="session")
def openai_server(demo_model_dirs, tmp_path_factory):
    """The vLLM server test_endpoint_vllm.py and test_endpoint_run.py send to (tests/backends/openai_server.py);
    not started yet. Skips where the vllm venv is missing, saying why (fails with CAREVAL_VLLM_REQUIRED=1)."""
    python, why = vllm_python()
    if python is None:
        if os.environ.get("CAREVAL_VLLM_REQUIRED") == "1":
            pytest.fail(f"CAREVAL_VLLM_REQUIRED=1 but {why}")
        pytest.skip(why)
    server = OpenAIServer(python, demo_model_dirs[MODEL], tmp_path_factory.getbasetemp() / "vllm-openai-server.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(openai_server, demo_model_dirs):
    """{"url", "folder"} of the server, up (CAREVAL_TEST_VLLM_URL: one of these settings already up, while
    developing)."""
    running = os.environ.get("CAREVAL_TEST_VLLM_URL")
    if running:
        return {"url": running.rstrip("/"), "folder": demo_model_dirs[MODEL]}
    return openai_server.running()


def pytest_runtest_teardown(item, nextitem):
    """The server stops after the last module of a row that uses it: the next test is another module's that does not
    ask for it, or none comes (pytest-xdist runs a test once it knows the next, so `nextitem` is the worker's own next
    test). Never within a module: its `server` fixture keeps the address to its end."""
    if "server" not in item.fixturenames:
        return
    if nextitem is None or (
        getattr(nextitem, "module", None) is not item.module and "server" not in nextitem.fixturenames
    ):
        server = item.funcargs.get("openai_server")
        if server is not None:
            server.stop()
