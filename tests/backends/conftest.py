"""Fixtures for the backend tests: a tiny random Llama with a byte-level BPE tokenizer built
offline (no hub), and the path of the real SmolLM2 folder when it exists."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "The patient presented with chest pain and shortness of breath.",
    "Aspirin is contraindicated in patients with active bleeding.",
    "Question: What is the first-line treatment for hypertension? Answer: lifestyle changes.",
    "A 45-year-old woman with type 2 diabetes was started on metformin 500 mg twice daily.",
    "Blood pressure was 150/95 mmHg; heart rate 88 beats per minute.",
    "The differential diagnosis includes pneumonia, pulmonary embolism and heart failure.",
    "Café, naïve, résumé: unicode should round-trip through the byte-level tokenizer.",
]


def _build_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        special_tokens=["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 3, trainer=trainer)
    # like Gemma/Llama-2: add_special_tokens=True puts BOS in front
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    fast.save_pretrained(out)
    return fast


def _build_llama(out: Path, **sizes) -> Path:
    """A 2-layer random Llama of `sizes` (hidden_size, heads, ...; float32 safetensors) and the offline tokenizer in `out`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _build_tokenizer(out)
    config = LlamaConfig(
        vocab_size=len(tok),
        num_hidden_layers=2,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        initializer_range=0.3,  # peaked distributions: wrong tokens/contexts show up in the scores
        tie_word_embeddings=False,
        **sizes,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A 2-layer, hidden-32 random Llama (float32 safetensors) and its tokenizer; no chat template."""
    sizes = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2)
    return _build_llama(tmp_path_factory.mktemp("tiny-llama"), **sizes, max_position_embeddings=128)


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
    """Factory: an HFBackend over the tiny model, spec keys overridable."""
    from careval.backends import load_backend

    def make(**overrides):
        spec = {"name": "tiny", "backend": "hf", "path": str(tiny_model_dir), "dtype": "float32", "batch_size": 1}
        spec.update(overrides)
        return load_backend(spec)

    return make


@pytest.fixture(scope="session")
def smollm2_dir(demo_model_dirs) -> Path:
    # prepared on first use (tests/conftest.py), so a fresh clone runs these tests instead of skipping
    return demo_model_dirs["smollm2-135m-instruct"]


@pytest.fixture(scope="session")
def gemma_dir(demo_model_dirs) -> Path:
    return demo_model_dirs["gemma3-270m"]
