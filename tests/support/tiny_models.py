"""Tiny models built offline (no hub, seconds on a CPU): a byte-level BPE tokenizer, a 2-layer random Llama
behind it, and a 2-layer Gemma 3 config with a sliding-window layer. The tests' fixtures build them once per
session (tests/conftest.py, tests/backends/conftest.py); tests/gpu reuses them on CUDA."""

from __future__ import annotations

from pathlib import Path

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


def build_tokenizer(out: Path):
    """A byte-level BPE tokenizer (vocabulary 420) trained offline on CORPUS, saved in `out`."""
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


def build_llama(out: Path, **sizes) -> Path:
    """A 2-layer random Llama of `sizes` (hidden_size, heads, ...; float32 safetensors) and the offline tokenizer in `out`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_tokenizer(out)
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


def tiny_gemma3_config(
    vocab_size: int,
    *,
    hidden_size: int = 32,
    intermediate_size: int = 64,
    num_attention_heads: int = 4,
    num_key_value_heads: int = 2,
    sliding_window: int = 4,
    **special_ids,
):
    """A 2-layer Gemma 3 text config whose first layer has a sliding window of `sliding_window` positions
    (head_dim 8, 128 positions; random weights)."""
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=2,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        head_dim=8,
        sliding_window=sliding_window,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=128,
        **special_ids,
    )
