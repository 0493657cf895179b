"""The parity tests' helpers (lm_eval_reference) sit beside them; lm-eval comes with the dev extra."""

from __future__ import annotations

import functools
import shutil
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="module")
def chat_model(tiny_llama_dir, tmp_path_factory):
    """The tiny Llama with a ChatML template as careval's hf backend of a `chat_template: true` model, and lm-eval's
    HFLM.apply_chat_template over the same tokenizer (what lm-eval's --apply_chat_template renders messages with)."""
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoTokenizer

    from careval.backends.hf.backend import HFBackend
    from support.tiny_models import CHATML

    folder = tmp_path_factory.mktemp("chat-llama") / "model"
    shutil.copytree(tiny_llama_dir, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)
    backend = HFBackend.load("chat", str(folder), dtype="float32", chat_template=True, device="cpu")
    lm = types.SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(folder), chat_template_args={})
    return backend, functools.partial(HFLM.apply_chat_template, lm)
