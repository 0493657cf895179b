"""Fixtures for the analysis tests: a tiny random-weight Llama (the backend tests' builder) behind the real HF backend."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _backend_fixtures():
    path = Path(__file__).resolve().parents[1] / "backends" / "conftest.py"
    spec = importlib.util.spec_from_file_location("careval_backend_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-llama-analysis")
    tok = _backend_fixtures()._build_tokenizer(out)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        initializer_range=0.3,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_spec(tiny_llama_dir) -> dict:
    return {
        "name": "tiny",
        "backend": "hf",
        "path": str(tiny_llama_dir),
        "dtype": "float32",
        "batch_size": 4,
        "device": "cpu",
        "threads": 1,
    }
