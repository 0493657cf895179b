"""Converting a GGUF file into a plain float32 safetensors folder that transformers loads in a second.

Why convert at all: loading a GGUF with transformers de-quantizes every tensor in Python on each load
(30 s for 135M parameters on 2 cores), and a GGUF-loaded model cannot be `save_pretrained`-ed
(it carries a gguf quantization_config). So we de-quantize once: load the GGUF, copy its state dict
into a fresh `from_config` model without the quantization_config, and save that as safetensors.
Weights are stored in float32 because that is exactly what de-quantization yields (no second
rounding); backends may cast to bf16 at load time.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from careval.models.source import ModelSourceError

# Tokens that end a turn or a document in common vocabularies. The GGUF names one EOS token only;
# an instruct model in chat ends with its end-of-turn marker, a completion may end with the
# end-of-text one, so both stop greedy generation (listed only when the vocabulary has them).
_END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eot_id|>", "<|end_of_text|>", "<eos>", "</s>")

_CHECK_TEXT = "The patient was admitted with chest pain and shortness of breath."


def _require_gguf_support(model: str) -> None:
    # transformers refuses GGUF loading without accelerate (a guard only; accelerate is not used on CPU).
    for mod in ("gguf", "accelerate"):
        try:
            __import__(mod)
        except ImportError:
            raise ModelSourceError(
                f"model {model!r}: converting a GGUF needs the '{mod}' package (pip install {mod})"
            ) from None


def _eos_ids(tokenizer, gguf_eos) -> list[int]:
    ids = [gguf_eos] if isinstance(gguf_eos, int) else list(gguf_eos or [])
    # Only special (added) tokens: in some vocabularies "</s>" is also ordinary text (HTML), and
    # stopping on it would cut answers short.
    special = {str(tok): tid for tid, tok in tokenizer.added_tokens_decoder.items() if tok.special}
    for marker in _END_MARKERS:
        tid = special.get(marker)
        if tid is not None and tid not in ids:
            ids.append(tid)
    return ids


@contextmanager
def _one_reader_per_file() -> Iterator[None]:
    """transformers parses the whole GGUF anew for the tokenizer, the config and the weights (its
    load_gguf_checkpoint builds a gguf.GGUFReader each time), and parsing reads the vocabulary's metadata
    element by element: about 12 s per parse for Gemma-3's 262k tokens here (its conversion took 55 s, 31 s
    with one parse). The readers are read-only views of the file (a memmap and the fields parsed from it), so
    within one conversion the first reader of a path serves the other two."""
    import gguf

    real = gguf.GGUFReader
    readers: dict[tuple[str, str], object] = {}

    def reader(path, mode: Literal["r", "r+", "c"] = "r"):
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = real(path, mode)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = real


def convert_gguf(gguf: Path, out_dir: Path, model: str) -> dict:
    """Write config.json, model.safetensors, generation_config.json and tokenizer files of `gguf` into
    `out_dir` (which must exist); returns facts for the provenance file. Checks the saved folder gives
    the GGUF model's logits before returning."""
    _require_gguf_support(model)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    t0 = time.monotonic()
    try:
        with _one_reader_per_file():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            qmodel = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except Exception as e:  # transformers' messages are multi-line; keep the first line and the type
        first = (str(e).strip().splitlines() or [""])[0]
        raise ModelSourceError(
            f"model {model!r}: transformers cannot load the gguf: {type(e).__name__}: {first}"
        ) from e
    qmodel.eval()

    # save_jinja_files=False keeps the chat template inside tokenizer_config.json, which every
    # consumer reads (older transformers, vLLM), instead of only in a separate chat_template.jinja.
    tokenizer.save_pretrained(out_dir, save_jinja_files=False)

    config = copy.deepcopy(qmodel.config)
    # The gguf quantization_config is what makes transformers refuse save_pretrained and would make
    # the saved folder look quantized; the weights we save are plain float tensors.
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.name_or_path = ""
    config._name_or_path = ""
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # strict: every parameter of the architecture must come from the GGUF, none left at random init.
    plain.load_state_dict(qmodel.state_dict(), strict=True)
    plain.generation_config = GenerationConfig(
        bos_token_id=qmodel.generation_config.bos_token_id,
        eos_token_id=_eos_ids(tokenizer, qmodel.generation_config.eos_token_id),
        pad_token_id=tokenizer.pad_token_id
        if tokenizer.pad_token_id is not None
        else qmodel.generation_config.pad_token_id,
    )
    # One file: small models, and `model.safetensors` is what the rest of the pipeline expects.
    plain.save_pretrained(out_dir, max_shard_size="100GB")
    del plain

    # Self-check on the written folder, so a bad folder never gets renamed into place.
    ids = tokenizer(_CHECK_TEXT, return_tensors="pt").input_ids
    with torch.no_grad():
        ref = qmodel(ids).logits
        del qmodel
        saved = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32).eval()
        got = saved(ids).logits
    diff = (ref - got).abs().max().item()
    if diff > 1e-4:
        raise ModelSourceError(f"model {model!r}: converted weights give different logits (max abs diff {diff:.2e})")
    return {
        "architecture": saved.config.model_type,
        "parameters": sum(p.numel() for p in saved.parameters()),
        "chat_template": bool(tokenizer.chat_template),
        "check_max_abs_logit_diff": diff,
        "convert_seconds": round(time.monotonic() - t0, 1),
    }


def write_provenance(out_dir: Path, facts: dict) -> None:
    (out_dir / PROVENANCE).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")


# Written last into the folder: says what it was prepared from, so a changed entry is re-prepared.
PROVENANCE = "careval_model.json"
