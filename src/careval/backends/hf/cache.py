"""A KV cache layer for generate that grows in place: a decode step writes its one position.

transformers' DynamicLayer appends each step's keys/values with ``torch.cat``, copying the whole
cache every step: in a CPU decode of SmolLM2-135M (12 rows, ~460-token prompts) the copies were
54% of the step (torch profiler), more than the matmuls. This layer keeps them in a buffer with
room to spare (doubling when full) and hands out views of its filled part: the same values, so
the same tokens. Any other cache operation that replaces ``keys`` (batch_select_indices,
reorder, a copy) leaves a tensor that is not a view of the buffer, and the next update starts a
new buffer from it.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache, DynamicLayer

# Positions of room a new buffer gets beyond what it holds (at least; it doubles when full).
_SPARE = 64


class GrowingLayer(DynamicLayer):
    """A full-attention layer's keys/values, stored [batch, heads, capacity, head_dim]."""

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self.keys is not None and self.values is not None  # initialised above
        length = self.keys.shape[-2] if self.keys.numel() else 0
        step = key_states.shape[-2]
        buffers: Any = getattr(self, "_buffers", None)
        if not self._owns_keys(buffers, length) or length + step > buffers[0].shape[-2]:
            capacity = max(2 * (length + step), length + step + _SPARE)
            buffers = tuple(
                new.new_empty((*new.shape[:2], capacity, new.shape[-1])) for new in (key_states, value_states)
            )
            if length:
                buffers[0][:, :, :length] = self.keys
                buffers[1][:, :, :length] = self.values
            self._buffers = buffers
        buffers[0][:, :, length : length + step] = key_states
        buffers[1][:, :, length : length + step] = value_states
        keys, values = buffers[0][:, :, : length + step], buffers[1][:, :, : length + step]
        self.keys, self.values = keys, values
        return keys, values

    def _owns_keys(self, buffers: tuple[torch.Tensor, torch.Tensor] | None, length: int) -> bool:
        """Whether keys/values are still this layer's views of its buffers (no other operation replaced them)."""
        if buffers is None or not length or self.keys is None or self.values is None:
            return False
        return all(
            held.data_ptr() == buffer.data_ptr() and held.shape[0] == buffer.shape[0]
            for held, buffer in ((self.keys, buffers[0]), (self.values, buffers[1]))
        )


def growing_cache(config: Any) -> DynamicCache:
    """The DynamicCache generate would build for this model config, its full-attention layers growing in place
    (sliding-window layers keep transformers' own, which drop old positions)."""
    cache = DynamicCache(config=config.get_text_config(decoder=True))
    cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache
