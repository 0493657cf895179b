"""Greedy generation speed of the prepared demo models (for sizing the demo); run on a quiet machine:
`pytest -m benchmark tests/models/test_model_speed.py -s`. Prints one JSON line per setting."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from support.threads import torch_threads

MODELS_DIR = Path(__file__).resolve().parents[2] / "resources" / "models"
QUESTION = "A 54-year-old man has crushing chest pain radiating to the left arm. What is the most likely diagnosis?"

pytestmark = [pytest.mark.benchmark, pytest.mark.slow]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch", [1, 16])
@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma3-270m", "qwen2.5-coder-0.5b-instruct"])
def test_greedy_generation_speed(name, batch, threads, dtype, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = MODELS_DIR / name
    if not (folder / "config.json").is_file():
        pytest.skip(f"{folder} not prepared (run the slow tests or the prepare_model rule first)")
    tok = AutoTokenizer.from_pretrained(folder)
    tok.padding_side = "left"  # batched generation continues every prompt right after its last token
    if tok.chat_template:
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": QUESTION}], tokenize=False, add_generation_prompt=True
        )
    else:
        prompt = f"Question: {QUESTION}\nAnswer:"
    enc = tok([prompt] * batch, return_tensors="pt", padding=True, add_special_tokens=not tok.chat_template)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).eval()
    with torch_threads(threads), torch.no_grad():
        model.generate(**enc, max_new_tokens=2, do_sample=False, pad_token_id=tok.pad_token_id)  # warm-up
        t0 = time.monotonic()
        out = model.generate(
            **enc, max_new_tokens=48, min_new_tokens=48, do_sample=False, pad_token_id=tok.pad_token_id
        )
        seconds = time.monotonic() - t0
    new = out.shape[1] - enc.input_ids.shape[1]
    assert new == 48
    print(
        json.dumps(
            {
                "model": name,
                "dtype": dtype,
                "threads": threads,
                "batch": batch,
                "seconds": round(seconds, 2),
                "tokens_per_s": round(batch * new / seconds, 1),
                "loadavg": round(os.getloadavg()[0], 2),
            }
        )
    )
