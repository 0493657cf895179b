"""BleurtScorer on tiny random-weight BLEURT checkpoints, checked against transformers' RemBERT/BERT."""

from __future__ import annotations

import io
import math

import numpy as np
import polars as pl
import pytest
import torch

from careval import scoring
from careval.metrics.bleurt import BleurtScorer, truncate_pair
from careval.metrics.bleurt_model import (
    BleurtCheckpointError,
    BleurtConfig,
    BleurtForSequenceClassification,
    load_bleurt_model,
)

CORPUS = [
    "the patient has a mild pulmonary edema",
    "no acute cardiopulmonary abnormality",
    "heart size is normal and lungs are clear",
    "small left pleural effusion with basilar atelectasis",
    "the feeding tube has been removed since the previous exam",
]
CANDIDATES = [
    "heart size is normal",
    "no acute abnormality",
    "mild edema of the lungs",
    "tube removed",
    "the patient has a small pleural effusion and the lungs are clear",
    "",
]
REFERENCES = [
    "the heart is normal and lungs are clear",
    "no acute cardiopulmonary abnormality",
    "mild pulmonary edema",
    "the feeding tube has been removed",
    "small left pleural effusion",
    "no effusion",
]
WORDS = sorted({w for s in CORPUS + CANDIDATES + REFERENCES for w in s.split()})


def _tiny_config(vocab_size: int, embedding_size: int | None) -> BleurtConfig:
    return BleurtConfig(
        vocab_size=vocab_size,
        embedding_size=embedding_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
    )


def _random_model(config: BleurtConfig) -> BleurtForSequenceClassification:
    torch.manual_seed(0)
    model = BleurtForSequenceClassification(config)
    with torch.no_grad():  # the default init zeroes biases and LayerNorm shifts: make every weight matter
        for param in model.parameters():
            param.normal_(0.0, 1.0)
    return model


@pytest.fixture(scope="module")
def sp_checkpoint(tmp_path_factory):
    """BLEURT-20 layout: RemBERT-style embedding projection + a SentencePiece spm.model."""
    import sentencepiece

    folder = tmp_path_factory.mktemp("bleurt_sp")
    buffer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 3),
        model_writer=buffer,
        vocab_size=60,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        num_threads=1,
        minloglevel=2,
        hard_vocab_limit=False,
    )
    (folder / "spm.model").write_bytes(buffer.getvalue())
    vocab = sentencepiece.SentencePieceProcessor(model_file=str(folder / "spm.model")).vocab_size()
    model = _random_model(_tiny_config(vocab, embedding_size=8))
    model.save_pretrained(folder)
    return folder, model


@pytest.fixture(scope="module")
def wp_checkpoint(tmp_path_factory):
    """bleurt-base layout: plain BERT + WordPiece vocab.txt."""
    folder = tmp_path_factory.mktemp("bleurt_wp")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ","] + WORDS
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    model = _random_model(_tiny_config(len(vocab), embedding_size=None))
    model.save_pretrained(folder)
    return folder, model


def _reference_logits_rembert(model: BleurtForSequenceClassification, ids, segments) -> list[float]:
    """Same weights in transformers' RemBertModel (one pair at a time, no padding) + the linear head."""
    from transformers import RemBertConfig, RemBertModel

    cfg = model.config
    rembert = RemBertModel(
        RemBertConfig(
            vocab_size=cfg.vocab_size,
            input_embedding_size=cfg.embedding_size,
            hidden_size=cfg.hidden_size,
            num_hidden_layers=cfg.num_hidden_layers,
            num_attention_heads=cfg.num_attention_heads,
            intermediate_size=cfg.intermediate_size,
            hidden_act=cfg.hidden_act,
            max_position_embeddings=cfg.max_position_embeddings,
            type_vocab_size=cfg.type_vocab_size,
            layer_norm_eps=cfg.layer_norm_eps,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            pad_token_id=cfg.pad_token_id,
            bos_token_id=None,
            eos_token_id=None,
        )
    ).eval()
    state = {
        k.removeprefix("bleurt.").replace("encoder.embedding_projection", "encoder.embedding_hidden_mapping_in"): v
        for k, v in model.state_dict().items()
        if k.startswith("bleurt.")
    }
    rembert.load_state_dict(state, strict=True)
    out = []
    with torch.no_grad():
        for pair_ids, pair_segments in zip(ids, segments):
            pooled = rembert(
                input_ids=torch.tensor([pair_ids]), token_type_ids=torch.tensor([pair_segments])
            ).pooler_output
            out.append(float(pooled[0] @ model.classifier.weight[0] + model.classifier.bias[0]))
    return out


def test_sentencepiece_checkpoint_matches_rembert(sp_checkpoint):
    import sentencepiece

    folder, model = sp_checkpoint
    sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    cls_id, sep_id = sp.piece_to_id("[CLS]"), sp.piece_to_id("[SEP]")
    # BLEURT's layout, written out by hand: [CLS] reference [SEP] candidate [SEP], segments 0 then 1.
    ids = [[cls_id, *sp.encode(r), sep_id, *sp.encode(c), sep_id] for c, r in zip(CANDIDATES, REFERENCES)]
    segments = [[0] * (len(sp.encode(r)) + 2) + [1] * (len(sp.encode(c)) + 1) for c, r in zip(CANDIDATES, REFERENCES)]
    want = _reference_logits_rembert(model, ids, segments)
    got = BleurtScorer(folder, batch_size=4).score(CANDIDATES, REFERENCES)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert np.std(got) > 0.05  # random weights that actually separate the pairs


def test_wordpiece_checkpoint_matches_bert(wp_checkpoint):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel

    folder, model = wp_checkpoint
    cfg = model.config
    bert = BertModel(
        BertConfig(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.hidden_size,
            num_hidden_layers=cfg.num_hidden_layers,
            num_attention_heads=cfg.num_attention_heads,
            intermediate_size=cfg.intermediate_size,
            hidden_act=cfg.hidden_act,
            max_position_embeddings=cfg.max_position_embeddings,
            type_vocab_size=cfg.type_vocab_size,
            layer_norm_eps=cfg.layer_norm_eps,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    ).eval()
    bert.load_state_dict(
        {k.removeprefix("bleurt."): v for k, v in model.state_dict().items() if k.startswith("bleurt.")}, strict=True
    )
    # The tokenizers library's own BERT pair template (reference first), one pair at a time.
    # (transformers 5's BertTokenizerFast(vocab_file=...) maps every word to [UNK], so it is not used.)
    tokenizer = BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=True)
    want = []
    with torch.no_grad():
        for candidate, reference in zip(CANDIDATES, REFERENCES):
            enc = tokenizer.encode(reference, candidate)
            assert tokenizer.token_to_id("[UNK]") not in enc.ids  # every word is in the vocabulary
            pooled = bert(input_ids=torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.type_ids])).pooler_output
            want.append(float(pooled[0] @ model.classifier.weight[0] + model.classifier.bias[0]))
    got = BleurtScorer(folder, batch_size=3).score(CANDIDATES, REFERENCES)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_batched_equals_unbatched_and_deterministic(sp_checkpoint):
    folder, _ = sp_checkpoint
    batched = BleurtScorer(folder, batch_size=4)
    one_by_one = BleurtScorer(folder, batch_size=1).score(CANDIDATES, REFERENCES)
    first = batched.score(CANDIDATES, REFERENCES)
    np.testing.assert_allclose(first, one_by_one, atol=1e-5, rtol=0)
    assert batched.score(CANDIDATES, REFERENCES) == first  # bit-identical on a rerun
    # A pair's score does not depend on which other pairs share the call beyond float noise.
    np.testing.assert_allclose(batched.score(CANDIDATES[:2], REFERENCES[:2]), first[:2], atol=1e-5, rtol=0)


def test_candidate_and_reference_order(sp_checkpoint):
    folder, _ = sp_checkpoint
    scorer = BleurtScorer(folder)
    ids, segments = scorer.encode("no acute abnormality", "mild edema")
    ref_ids, cand_ids = scorer._tokens("mild edema"), scorer._tokens("no acute abnormality")
    assert ids == [scorer._tokens.cls_id, *ref_ids, scorer._tokens.sep_id, *cand_ids, scorer._tokens.sep_id]
    assert segments == [0] * (len(ref_ids) + 2) + [1] * (len(cand_ids) + 1)
    forward, swapped = (
        scorer.score(["no acute abnormality"], ["mild edema"]),
        scorer.score(["mild edema"], ["no acute abnormality"]),
    )
    assert forward != swapped


def test_truncation_follows_bleurt():
    # Hand-run of BLEURT's _truncate_seq_pair: pop from the longer side, from the candidate on ties.
    assert truncate_pair([1, 2, 3, 4, 5, 6], [7, 8], 6) == ([1, 2, 3, 4], [7, 8])
    assert truncate_pair([1, 2, 3], [4, 5, 6], 4) == ([1, 2], [4, 5])
    assert truncate_pair([1, 2, 3], [4, 5, 6], 5) == ([1, 2, 3], [4, 5])
    assert truncate_pair([1], [2, 3, 4, 5], 10) == ([1], [2, 3, 4, 5])


def test_long_inputs_are_truncated_to_max_length(sp_checkpoint):
    folder, _ = sp_checkpoint
    scorer = BleurtScorer(folder, max_length=20)
    long_text = " ".join(CORPUS)
    ids, segments = scorer.encode(long_text, long_text)
    assert len(ids) == len(segments) == 20
    assert math.isfinite(scorer.score([long_text], [long_text])[0])
    # max_length is capped by the model's position table (128 here).
    assert BleurtScorer(folder, max_length=512).max_length == 128


def expected_checkpoint_keys(num_layers: int, projection: bool) -> set[str]:
    """Parameter names of bleurt-pytorch 0.0.1's BleurtForSequenceClassification (what the hub checkpoints hold)."""
    keys = {
        f"bleurt.embeddings.{name}.weight"
        for name in ("word_embeddings", "position_embeddings", "token_type_embeddings")
    }
    keys |= {"bleurt.embeddings.LayerNorm.weight", "bleurt.embeddings.LayerNorm.bias"}
    if projection:
        keys |= {"bleurt.encoder.embedding_projection.weight", "bleurt.encoder.embedding_projection.bias"}
    per_layer = [
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "attention.output.LayerNorm",
        "intermediate.dense",
        "output.dense",
        "output.LayerNorm",
    ]
    for layer in range(num_layers):
        keys |= {f"bleurt.encoder.layer.{layer}.{module}.{p}" for module in per_layer for p in ("weight", "bias")}
    keys |= {"bleurt.pooler.dense.weight", "bleurt.pooler.dense.bias", "classifier.weight", "classifier.bias"}
    return keys


@pytest.mark.parametrize("projection", [True, False])
def test_state_dict_names_match_checkpoint_names(projection):
    model = BleurtForSequenceClassification(_tiny_config(40, 8 if projection else None))
    assert set(model.state_dict()) == expected_checkpoint_keys(2, projection)


def _write_bin_checkpoint(folder, state: dict, config: BleurtConfig) -> None:
    """The hub checkpoints' format: pytorch_model.bin, saved when position_ids was a persistent buffer."""
    folder.mkdir()
    config.save_pretrained(folder)
    torch.save(state, folder / "pytorch_model.bin")


def test_bin_checkpoint_with_position_ids_loads_exactly(tmp_path):
    model = _random_model(_tiny_config(40, 8))
    state = {**model.state_dict(), "bleurt.embeddings.position_ids": torch.arange(128)[None]}
    _write_bin_checkpoint(tmp_path / "ckpt", state, model.config)
    loaded = load_bleurt_model(tmp_path / "ckpt")
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


@pytest.mark.parametrize("change", ["missing", "unexpected", "renamed"])
def test_checkpoint_that_does_not_fit_fails_loudly(tmp_path, change):
    model = _random_model(_tiny_config(40, 8))
    state = dict(model.state_dict())
    if change == "missing":
        state.pop("bleurt.encoder.embedding_projection.weight")
    elif change == "unexpected":
        state["bleurt.encoder.extra.weight"] = torch.zeros(3)
    else:  # e.g. a checkpoint using RemBERT's names would otherwise load as random weights
        state["bleurt.encoder.embedding_hidden_mapping_in.bias"] = state.pop("bleurt.encoder.embedding_projection.bias")
    _write_bin_checkpoint(tmp_path / "ckpt", state, model.config)
    with pytest.raises(BleurtCheckpointError, match="does not match the model"):
        load_bleurt_model(tmp_path / "ckpt")


@pytest.mark.parametrize("model", ["lucadiliello/BLEURT-20-D12", "/nonexistent/bleurt-folder"])
def test_missing_checkpoint_offline_gives_one_line_error(model, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BleurtCheckpointError) as err:
        BleurtScorer(model)
    message = str(err.value)
    assert "\n" not in message and "metrics.bleurt.model" in message and model in message


def test_score_text_bleurt_family(sp_checkpoint):
    folder, _ = sp_checkpoint
    samples = pl.DataFrame({"id": ["a", "b", "c", "d"], "reference": REFERENCES[:4]})
    generations = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "output": [CANDIDATES[0], "", CANDIDATES[2], CANDIDATES[3]],
            "status": ["ok", "empty_output", "ok", "ok"],
        }
    )
    rows = scoring.score_text("bleurt", samples, generations, {"model": str(folder), "batch_size": 2})
    assert rows["metric"].to_list() == ["bleurt"] * 4
    assert rows["status"].to_list() == ["ok", "empty_output", "ok", "ok"]
    assert rows["level"].unique().to_list() == ["sample"]
    values = rows["value"].to_list()
    assert math.isnan(values[1])
    want = BleurtScorer(folder).score(
        [CANDIDATES[0], CANDIDATES[2], CANDIDATES[3]], [REFERENCES[0], REFERENCES[2], REFERENCES[3]]
    )
    np.testing.assert_allclose([values[0], values[2], values[3]], want, atol=1e-6, rtol=0)


def test_score_text_bleurt_without_valid_samples_loads_nothing():
    samples = pl.DataFrame({"id": ["a"], "reference": ["x"]})
    generations = pl.DataFrame({"id": ["a"], "output": [""], "status": ["empty_output"]})
    # A model that does not exist is never touched when no sample needs scoring.
    rows = scoring.score_text("bleurt", samples, generations, {"model": "/nonexistent/bleurt"})
    assert rows["status"].to_list() == ["empty_output"] and math.isnan(rows["value"][0])


@pytest.mark.slow
def test_real_bleurt_20_d12_matches_bleurt_pytorch_readme():
    """Needs lucadiliello/BLEURT-20-D12 (hub or cache); the values are the ones bleurt-pytorch's README prints."""
    try:
        scorer = BleurtScorer("lucadiliello/BLEURT-20-D12", batch_size=2)
    except BleurtCheckpointError as err:
        pytest.skip(str(err))
    references = ["a bird chirps by the window", "this is a random sentence"]
    candidates = ["a bird chirps by the window", "this looks like a random sentence"]
    np.testing.assert_allclose(
        scorer.score(candidates, references), [0.9604414105415344, 0.8080050349235535], atol=1e-3
    )
