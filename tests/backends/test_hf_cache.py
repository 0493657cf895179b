"""GrowingLayer (hf/cache.py) holds what transformers' DynamicLayer holds after the same operations."""

from __future__ import annotations

import copy

import torch
from transformers import DynamicLayer, LlamaConfig

from careval.backends.hf.cache import GrowingLayer, growing_cache
from support.tiny_models import tiny_gemma3_config


def states(batch: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn((batch, 2, n, 4), generator=g), torch.randn((batch, 2, n, 4), generator=g)


def same(a: DynamicLayer, b: DynamicLayer) -> bool:
    return torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)


def test_updates_hold_what_concatenation_holds():
    grow, plain = GrowingLayer(), DynamicLayer()
    for step, n in enumerate([37, 1, 1, 30, 1, 100, 1]):  # a prefill, decode steps, growth past the spare room
        k, v = states(3, n, step)
        got, want = grow.update(k, v), plain.update(k, v)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert same(grow, plain) and grow.get_seq_length() == 171


def test_a_step_writes_in_place_until_the_buffer_is_full():
    layer = GrowingLayer()
    layer.update(*states(2, 10, 0))
    buffer = layer._buffers[0].data_ptr()
    for step in range(60):
        layer.update(*states(2, 1, step + 1))
    assert layer._buffers[0].data_ptr() == buffer  # 10 + 64 spare positions: no copy yet
    layer.update(*states(2, 20, 99))
    assert layer._buffers[0].data_ptr() != buffer and layer.get_seq_length() == 90


def test_operations_that_replace_the_keys_start_a_new_buffer():
    grow, plain = GrowingLayer(), DynamicLayer()
    for layer in (grow, plain):
        layer.update(*states(3, 12, 0))
    rows = torch.tensor([2, 0, 0])
    for layer in (grow, plain):  # batch_select_indices (shared-prefix scoring), then more steps
        layer.batch_select_indices(rows)
        layer.update(*states(3, 1, 1))
    assert same(grow, plain)
    copied = copy.deepcopy(grow)
    copied.update(*states(3, 5, 2))
    grow.update(*states(3, 1, 3))
    plain.update(*states(3, 1, 3))
    assert same(grow, plain) and copied.get_seq_length() == 18 and grow.get_seq_length() == 14
    for layer in (grow, plain):
        layer.crop(-8)  # drop the last 8 positions
        layer.update(*states(3, 2, 4))
    assert same(grow, plain) and grow.get_seq_length() == 8


def test_growing_cache_keeps_sliding_layers_as_transformers_builds_them():
    config = LlamaConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, vocab_size=32)
    assert [type(layer) for layer in growing_cache(config).layers] == [GrowingLayer, GrowingLayer]
    from transformers.cache_utils import DynamicSlidingWindowLayer

    gemma = tiny_gemma3_config(32)
    assert [type(layer) for layer in growing_cache(gemma).layers] == [DynamicSlidingWindowLayer, GrowingLayer]
