"""BLEURT regression model (BERT/RemBERT encoder + linear head) loadable under transformers 5.

Ported from bleurt-pytorch 0.0.1 (the PyPI wheel; its modeling/configuration files are those of
github.com/lucadiliello/bleurt-pytorch commit ae32bfe5cf26be0235cbc3908baa22d820b788be), Apache-2.0,
(c) Luca Di Liello; itself adapted from transformers' modeling_bert.py (Apache-2.0):
`BleurtConfig`, the embeddings/self-attention/attention-output/intermediate/output/layer/encoder/
pooler modules, `BleurtModel` and `BleurtForSequenceClassification`, keeping every module and
parameter name so the converted checkpoints (lucadiliello/BLEURT-20, BLEURT-20-D12, ...) load
unchanged. Removed: head pruning, head masks, gradient checkpointing, attention/hidden-state
outputs, losses and the masked-LM head (scoring needs none of them).

Why a port instead of the package (all seen with transformers 5.24):
- bleurt-pytorch 0.0.1 does not import: `ImportError: cannot import name
  'find_pruneable_heads_and_indices' from 'transformers.pytorch_utils'`;
- its `BleurtModel.forward` calls `PreTrainedModel.get_extended_attention_mask` and
  `get_head_mask`, both removed (AttributeError);
- transformers 5's `from_pretrained` leaves non-persistent buffers uninitialised (torch.empty):
  its `token_type_ids` buffer is one, and a non-persistent `position_ids` would be too, so
  positions are computed in `forward` here (the comparison with RemBERT in the tests caught it);
- its SentencePiece tokenizer subclasses `DebertaV2Tokenizer`, now a `tokenizers` Unigram model
  with NFC instead of the model's own normaliser, whose `from_pretrained` on a folder holding
  spm.model fails (ValueError from a tiktoken conversion attempt); `careval.metrics.bleurt`
  tokenizes with `sentencepiece` itself, as TensorFlow BLEURT does.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.activations import ACT2FN


class BleurtConfig(PretrainedConfig):
    """BERT hyper-parameters plus `embedding_size` (RemBERT-style factorised input embeddings)."""

    model_type = "bleurt"

    def __init__(
        self,
        vocab_size: int = 30522,
        embedding_size: int | None = None,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 3072,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        pad_token_id: int = 0,
        classifier_dropout: float | None = None,
        num_labels: int = 1,
        tie_word_embeddings: bool = False,
        **kwargs,
    ):
        super().__init__(pad_token_id=pad_token_id, num_labels=num_labels, **kwargs)  # pyright: ignore[reportCallIssue]  (PretrainedConfig takes them through **kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.hidden_act = hidden_act
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.classifier_dropout = classifier_dropout
        self.tie_word_embeddings = tie_word_embeddings


class BleurtEmbeddings(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        size = config.embedding_size or config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, size)
        self.LayerNorm = nn.LayerNorm(size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        # No position_ids buffer (bleurt-pytorch has one): transformers 5's from_pretrained leaves
        # non-persistent buffers uninitialised (torch.empty), which silently scrambles positions.

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None, :]
        embeddings = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings(token_type_ids)
            + self.position_embeddings(positions)
        )
        return self.dropout(self.LayerNorm(embeddings))


class BleurtSelfAttention(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        if config.hidden_size % config.num_attention_heads:
            raise ValueError(
                f"hidden_size {config.hidden_size} is not a multiple of num_attention_heads {config.num_attention_heads}"
            )
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(*x.shape[:-1], self.num_attention_heads, self.attention_head_size).permute(0, 2, 1, 3)

    def forward(self, hidden_states: torch.Tensor, attention_bias: torch.Tensor) -> torch.Tensor:
        query, key, value = (self._heads(layer(hidden_states)) for layer in (self.query, self.key, self.value))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        probs = self.dropout(nn.functional.softmax(scores + attention_bias, dim=-1))
        context = torch.matmul(probs, value).permute(0, 2, 1, 3).contiguous()
        return context.view(*context.shape[:-2], -1)


class BleurtSelfOutput(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BleurtAttention(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.self = BleurtSelfAttention(config)
        self.output = BleurtSelfOutput(config)

    def forward(self, hidden_states: torch.Tensor, attention_bias: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(hidden_states, attention_bias), hidden_states)


class BleurtIntermediate(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = (
            ACT2FN[config.hidden_act] if isinstance(config.hidden_act, str) else config.hidden_act
        )

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))


class BleurtOutput(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BleurtLayer(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.attention = BleurtAttention(config)
        self.intermediate = BleurtIntermediate(config)
        self.output = BleurtOutput(config)

    def forward(self, hidden_states: torch.Tensor, attention_bias: torch.Tensor) -> torch.Tensor:
        attended = self.attention(hidden_states, attention_bias)
        return self.output(self.intermediate(attended), attended)


class BleurtEncoder(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.layer = nn.ModuleList([BleurtLayer(config) for _ in range(config.num_hidden_layers)])
        if config.embedding_size is not None:
            # RemBERT-style checkpoints (BLEURT-20*) embed in a smaller space and project up here.
            self.embedding_projection = nn.Linear(config.embedding_size, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor, attention_bias: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "embedding_projection"):
            hidden_states = self.embedding_projection(hidden_states)
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_bias)
        return hidden_states


class BleurtPooler(nn.Module):
    def __init__(self, config: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


class BleurtPreTrainedModel(PreTrainedModel):
    config_class = BleurtConfig
    base_model_prefix = "bleurt"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        # As bleurt-pytorch: only used for a model built from a config (tests); checkpoints overwrite all.
        if isinstance(module, nn.Linear):
            module.weight.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.zero_()
            module.weight.fill_(1.0)


class BleurtModel(BleurtPreTrainedModel):
    def __init__(self, config: BleurtConfig):
        super().__init__(config)
        self.embeddings = BleurtEmbeddings(config)
        self.encoder = BleurtEncoder(config)
        self.pooler = BleurtPooler(config)
        self.post_init()

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """Pooled [CLS] representation, (batch, hidden_size)."""
        embedded = self.embeddings(input_ids, token_type_ids)
        # What transformers 4's get_extended_attention_mask built: 0 to attend, dtype-min to mask.
        bias = (1.0 - attention_mask[:, None, None, :].to(embedded.dtype)) * torch.finfo(embedded.dtype).min
        return self.pooler(self.encoder(embedded, bias))


class BleurtForSequenceClassification(BleurtPreTrainedModel):
    # The converted checkpoints were saved while bleurt-pytorch's position_ids was a persistent buffer.
    _keys_to_ignore_on_load_unexpected = [r"bleurt\.embeddings\.position_ids"]  # noqa: RUF012  (transformers reads a list)

    def __init__(self, config: BleurtConfig):
        super().__init__(config)
        self.bleurt = BleurtModel(config)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)  # pyright: ignore[reportArgumentType]  (num_labels is set by the config)
        self.post_init()

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """Regression logits, (batch, num_labels); BLEURT's score is logits[:, 0]."""
        return self.classifier(self.dropout(self.bleurt(input_ids, attention_mask, token_type_ids)))


class BleurtCheckpointError(RuntimeError):
    """A BLEURT checkpoint that is missing, or whose weights do not fit the port exactly."""


def load_bleurt_model(model: str | Path) -> BleurtForSequenceClassification:
    """BleurtForSequenceClassification from a local folder or hub id, failing on any unloaded weight.

    A missing or unexpected parameter would otherwise leave random weights in place and give
    plausible-looking but meaningless scores.
    """
    try:
        loaded, info = BleurtForSequenceClassification.from_pretrained(  # pyright: ignore[reportGeneralTypeIssues]  (output_loading_info=True returns a pair)
            str(model), output_loading_info=True, dtype=torch.float32
        )
    except OSError as err:
        raise BleurtCheckpointError(missing_checkpoint_message(model, err)) from err
    problems = {kind: sorted(info.get(kind) or []) for kind in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    problems = {kind: keys for kind, keys in problems.items() if keys}
    if problems:
        summary = "; ".join(f"{kind}: {keys[:5]}{' ...' if len(keys) > 5 else ''}" for kind, keys in problems.items())
        raise BleurtCheckpointError(f"BLEURT checkpoint '{model}' does not match the model ({summary})")
    return loaded.eval()


def missing_checkpoint_message(model: str | Path, err: Exception) -> str:
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return (
        f"BLEURT checkpoint '{model}' could not be loaded ({first_line}); set metrics.bleurt.model to a "
        "local folder holding config.json, the weights and spm.model or vocab.txt (e.g. after "
        "`hf download lucadiliello/BLEURT-20-D12 --local-dir <folder>`)"
    )
