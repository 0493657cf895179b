"""The shared token rules (lm-eval's) and the window / seed / stop helpers."""

from __future__ import annotations

import pytest

from careval.backends.base import Sampling
from careval.backends.tokenization import (
    encode,
    encode_pair,
    generation_tokens,
    get_rolling_token_windows,
    make_disjoint_window,
    prefix_token_id,
    request_seeds,
    resolve_max_length,
    rolling_pairs,
    rolling_tokens,
    scoring_window,
    truncate_at_stop,
)


def test_rolling_windows_hand_worked_example():
    tokens = list(range(1, 11))  # 10 tokens, window 4, prefix 0
    windows = list(get_rolling_token_windows(tokens, prefix_token=0, max_seq_len=4, context_len=1))
    assert windows == [
        ([0, 1, 2, 3], [1, 2, 3, 4]),
        ([4, 5, 6, 7], [5, 6, 7, 8]),
        ([6, 7, 8, 9], [9, 10]),
    ]
    assert [make_disjoint_window(w) for w in windows] == [
        ([0], [1, 2, 3, 4]),
        ([4], [5, 6, 7, 8]),
        ([6, 7, 8], [9, 10]),
    ]


@pytest.mark.parametrize("n", [0, 1, 3, 7, 8, 9, 16, 17, 40])
@pytest.mark.parametrize("max_len", [1, 2, 8])
def test_rolling_pairs_cover_every_token_once_with_the_longest_allowed_context(n, max_len):
    tokens = list(range(100, 100 + n))
    pairs = rolling_pairs(tokens, prefix_token=7, max_length=max_len)
    assert [t for _, cont in pairs for t in cont] == tokens
    stream = [7] + tokens  # every window is a contiguous slice of prefix + text
    end = 1
    for k, (ctx, cont) in enumerate(pairs):
        end += len(cont)
        window = ctx + cont
        assert window == stream[end - len(window) : end]
        assert 1 <= len(cont) <= max_len
        # the model sees window[:-1]: at most max_len tokens, and exactly max_len after the first
        assert len(window) - 1 <= max_len
        if k > 0:
            assert len(window) - 1 == max_len


def test_rolling_window_arguments_are_checked():
    with pytest.raises(ValueError):
        list(get_rolling_token_windows([1, 2], prefix_token=0, max_seq_len=2, context_len=3))


def test_encode_pair_moves_trailing_whitespace_onto_the_continuation(tiny_tokenizer):
    tok = tiny_tokenizer
    ctx, cont = encode_pair(tok, "The patient ", "presented", add_bos=False)
    assert ctx == tok.encode("The patient", add_special_tokens=False)
    assert ctx + cont == tok.encode("The patient presented", add_special_tokens=False)
    assert tok.decode(cont) == " presented"


def test_default_special_tokens_are_the_tokenizers_own(tiny_tokenizer):
    tok = tiny_tokenizer  # its post-processor prepends <s>, as Llama/Gemma tokenizers do
    plain = tok.encode("Blood pressure", add_special_tokens=False)
    assert encode(tok, "Blood pressure", None) == [tok.bos_token_id] + plain
    assert encode(tok, "Blood pressure", False) == plain
    assert encode(tok, "Blood pressure", True) == [tok.bos_token_id] + plain
    # a text that already starts with the BOS text gets no second one
    assert encode(tok, "<s>Blood pressure", None) == [tok.bos_token_id] + plain
    assert encode(tok, "<s>Blood pressure", True) == [tok.bos_token_id] + plain
    ctx, cont = encode_pair(tok, "Blood pressure", " was", add_bos=None)
    assert ctx == [tok.bos_token_id] + plain
    assert ctx + cont == [tok.bos_token_id] + tok.encode("Blood pressure was", add_special_tokens=False)


def test_encode_pair_empty_context_is_the_bos_token(tiny_tokenizer):
    tok = tiny_tokenizer
    for add_bos in (None, True, False):
        ctx, cont = encode_pair(tok, "", "Aspirin", add_bos=add_bos)
        assert ctx == [tok.bos_token_id] == [prefix_token_id(tok)]
        assert cont == tok.encode("Aspirin", add_special_tokens=False)
    # a continuation that starts with BOS itself: that BOS is the context (lm-eval 0.4.13)
    ctx, cont = encode_pair(tok, "", "<s>Aspirin", add_bos=None)
    assert ctx == [tok.bos_token_id] and cont == tok.encode("Aspirin", add_special_tokens=False)


def test_rolling_tokens_drop_the_tokenizers_own_bos(tiny_tokenizer):
    tok = tiny_tokenizer
    plain = tok.encode("Blood pressure was high", add_special_tokens=False)
    assert rolling_tokens(tok, "Blood pressure was high", None) == plain
    assert rolling_tokens(tok, "Blood pressure was high", False) == plain
    assert rolling_tokens(tok, "", None) == []


def test_scoring_window_truncates_from_the_left_and_keeps_the_continuation():
    tokens, n = scoring_window(list(range(10)), [10, 11, 12], max_length=5)
    assert tokens == [7, 8, 9, 10, 11, 12] and n == 3
    tokens, n = scoring_window([1, 2], [3], max_length=5)
    assert tokens == [1, 2, 3] and n == 1
    with pytest.raises(ValueError, match="zero tokens"):
        scoring_window([1, 2], [], max_length=5)
    with pytest.raises(ValueError, match="longer than the context window"):
        scoring_window([1], list(range(6)), max_length=5)


def test_generation_tokens_truncate_left_and_do_not_double_the_bos(tiny_tokenizer):
    tok = tiny_tokenizer
    text = "The differential diagnosis includes pneumonia"
    plain = tok.encode(text, add_special_tokens=False)
    ids, n = generation_tokens(tok, text, add_bos=False, max_prompt_tokens=1000)
    assert ids == plain and n == len(plain)
    ids, n = generation_tokens(tok, text, add_bos=None, max_prompt_tokens=1000)
    assert ids == [tok.bos_token_id] + plain and n == len(plain) + 1
    ids, n = generation_tokens(tok, text, add_bos=False, max_prompt_tokens=3)
    assert ids == plain[-3:] and n == len(plain)
    for add_bos in (None, True):
        ids, _ = generation_tokens(tok, "<s>" + text, add_bos=add_bos, max_prompt_tokens=1000)
        assert ids == [tok.bos_token_id] + plain
    with pytest.raises(ValueError, match="no room"):
        generation_tokens(tok, text, add_bos=False, max_prompt_tokens=0)


def test_max_length_comes_from_the_config_unless_given(tiny_tokenizer):
    class Cfg:
        max_position_embeddings = 4096

    assert resolve_max_length(Cfg(), tiny_tokenizer) == 4096
    assert resolve_max_length(Cfg(), tiny_tokenizer, 512) == 512
    assert resolve_max_length(object(), None) == 2048


def test_request_seeds_follow_the_prompt_not_its_position():
    prompts = ["a", "b", "c", "a"]
    seeds = request_seeds(7, prompts)
    assert seeds[0] != seeds[3]  # a repeated prompt gets a fresh sample
    assert len(set(seeds)) == 4
    shuffled = request_seeds(7, ["c", "a", "b", "a"])
    assert shuffled == [seeds[2], seeds[0], seeds[1], seeds[3]]
    assert request_seeds(8, prompts) != seeds


def test_truncate_at_stop_cuts_at_the_earliest_stop():
    assert truncate_at_stop("abc\n\nQuestion: x", ["Question:", "\n\n"]) == "abc"
    assert truncate_at_stop("abc", ["zz"]) == "abc"
    assert truncate_at_stop("abc", []) == "abc"


def test_sampling_is_validated_and_hashable():
    s = Sampling(stop=["\n"])  # a YAML list becomes a tuple
    assert s.stop == ("\n",) and hash(s) == hash(Sampling(stop=("\n",)))
    assert Sampling().greedy and not Sampling(temperature=0.7).greedy
    for bad in (dict(max_new_tokens=0), dict(temperature=-1), dict(top_p=0), dict(stop=("",))):
        with pytest.raises(ValueError):
            Sampling(**bad)
