"""Fixtures for the backend tests: a tiny random Llama with a byte-level BPE tokenizer built
offline (no hub), and the path of the real SmolLM2 folder when it exists."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.tiny_models import CHATML, build_llama

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
