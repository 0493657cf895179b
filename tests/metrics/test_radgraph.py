"""F1-RadGraph rewards on hand-made entity/relation graphs: hand-computed values and the radgraph package."""

from __future__ import annotations

import math
from fractions import Fraction

import polars as pl
import pytest
import torch

from careval import scoring
from careval.metrics import radgraph as rg
from careval.metrics.radgraph import F1RadGraphScorer, RadGraphModelError, radgraph_reward


def entity(tokens: str, label: str, *relations: tuple[str, str]) -> dict:
    return {"tokens": tokens, "label": label, "start_ix": 0, "end_ix": 0, "relations": [list(r) for r in relations]}


def graph(*entities: dict) -> dict:
    return {"text": "", "entities": {str(i + 1): e for i, e in enumerate(entities)}}


REFERENCE = graph(
    entity("effusion", "OBS-DP", ("located_at", "2")), entity("pleural", "ANAT-DP"), entity("edema", "OBS-DA")
)

# name -> (hypothesis, reference, hand-computed {level: F1})
CASES = {
    # Entities: effusion, edema match ("left" != "pleural") -> P = R = 2/3.
    # With relation flag: only effusion matches (edema gained a relation) -> 1/3.
    # Triples: effusion->left != effusion->pleural, lone left != pleural, edema has a triple -> 0.
    "levels_differ": (
        graph(
            entity("effusion", "OBS-DP", ("located_at", "2")),
            entity("left", "ANAT-DP"),
            entity("edema", "OBS-DA", ("suggestive_of", "1")),
        ),
        REFERENCE,
        {"simple": Fraction(2, 3), "partial": Fraction(1, 3), "complete": Fraction(0)},
    ),
    # The reference plus one extra lone entity: P = 3/4, R = 1 -> F1 = 6/7 at every level.
    "extra_entity": (
        graph(
            entity("effusion", "OBS-DP", ("located_at", "2")),
            entity("pleural", "ANAT-DP"),
            entity("edema", "OBS-DA"),
            entity("cardiomegaly", "OBS-DA"),
        ),
        REFERENCE,
        {"simple": Fraction(6, 7), "partial": Fraction(6, 7), "complete": Fraction(6, 7)},
    ),
    "identical": (REFERENCE, REFERENCE, {"simple": Fraction(1), "partial": Fraction(1), "complete": Fraction(1)}),
    # Repeated entities count once (sets): hypothesis {edema}, reference {edema, effusion} -> P = 1, R = 1/2.
    "duplicates_collapse": (
        graph(entity("edema", "OBS-DA"), entity("edema", "OBS-DA")),
        graph(entity("edema", "OBS-DA"), entity("effusion", "OBS-DP")),
        {"simple": Fraction(2, 3), "partial": Fraction(2, 3), "complete": Fraction(2, 3)},
    ),
    # Labels matter: same tokens, other label -> nothing matches.
    "label_mismatch": (
        graph(entity("edema", "OBS-U")),
        graph(entity("edema", "OBS-DA")),
        {"simple": Fraction(0), "partial": Fraction(0), "complete": Fraction(0)},
    ),
    # Case: only relation triples are lower-cased (the package's rule). Simple/partial: "Effusion" and
    # "Pleural" differ from the lower-case reference -> 0. Complete: the triple matches, lone
    # "Pleural" does not -> P = R = 1/2.
    "case_only_folded_in_triples": (
        graph(entity("Effusion", "OBS-DP", ("located_at", "2")), entity("Pleural", "ANAT-DP")),
        graph(entity("effusion", "OBS-DP", ("located_at", "2")), entity("pleural", "ANAT-DP")),
        {"simple": Fraction(0), "partial": Fraction(0), "complete": Fraction(1, 2)},
    ),
    # Two relations give two triples; the hypothesis has one of them. Complete: hyp {t1, lone lung,
    # lone base} vs ref {t1, t2, lung, base} -> P = 1, R = 3/4 -> 6/7. Simple/partial: all entities match.
    "two_relations": (
        graph(entity("opacity", "OBS-DP", ("located_at", "2")), entity("lung", "ANAT-DP"), entity("base", "ANAT-DP")),
        graph(
            entity("opacity", "OBS-DP", ("located_at", "2"), ("located_at", "3")),
            entity("lung", "ANAT-DP"),
            entity("base", "ANAT-DP"),
        ),
        {"simple": Fraction(1), "partial": Fraction(1), "complete": Fraction(6, 7)},
    ),
    "empty_hypothesis": (graph(), REFERENCE, {"simple": Fraction(0), "partial": Fraction(0), "complete": Fraction(0)}),
    "empty_reference": (REFERENCE, graph(), {"simple": Fraction(0), "partial": Fraction(0), "complete": Fraction(0)}),
    "both_empty": (graph(), graph(), {"simple": Fraction(0), "partial": Fraction(0), "complete": Fraction(0)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("level", rg.REWARD_LEVELS)
def test_reward_matches_hand_computation(name, level):
    hypothesis, reference, want = CASES[name]
    assert radgraph_reward(hypothesis, reference, level) == pytest.approx(float(want[level]), abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reward_equals_radgraph_package(name):
    from radgraph.rewards import compute_reward

    hypothesis, reference, _ = CASES[name]
    for level in rg.REWARD_LEVELS:
        assert radgraph_reward(hypothesis, reference, level) == compute_reward(hypothesis, reference, level)
    assert tuple(radgraph_reward(hypothesis, reference, level) for level in rg.REWARD_LEVELS) == tuple(
        compute_reward(hypothesis, reference, "all")
    )


def test_unknown_level_is_a_clear_error():
    with pytest.raises(ValueError, match="reward_level"):
        rg.reward_levels("strict")
    with pytest.raises(ValueError, match="reward level"):
        radgraph_reward(REFERENCE, REFERENCE, "all")


# Texts the fake extractor "annotates": stands in for the RadGraph model, which needs the hub.
GRAPHS = {
    "small left effusion, edema suggestive": CASES["levels_differ"][0],
    "pleural effusion and edema": REFERENCE,
    "effusion pleural edema cardiomegaly": CASES["extra_entity"][0],
    "nothing to extract": graph(),
    "Effusion Pleural": CASES["case_only_folded_in_triples"][0],
    "effusion pleural": CASES["case_only_folded_in_triples"][1],
}
HYPS = [
    "small left effusion, edema suggestive",
    "effusion pleural edema cardiomegaly",
    "nothing to extract",
    "",
    "Effusion Pleural",
    "pleural effusion and edema",
]
REFS = [
    "pleural effusion and edema",
    "pleural effusion and edema",
    "pleural effusion and edema",
    "pleural effusion and edema",
    "effusion pleural",
    "",
]


class FakeAnnotator:
    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, texts: list[str]) -> list[dict]:
        self.seen.extend(texts)
        return [GRAPHS[t] for t in texts]


def test_scorer_equals_package_f1radgraph_on_the_same_annotations():
    from radgraph import F1RadGraph

    annotator = FakeAnnotator()
    got = F1RadGraphScorer(reward_level="all", annotator=annotator, batch_size=2).score(HYPS, REFS)
    # The package's own pairing/empty handling, with its extractor replaced by the same lookup.
    package = F1RadGraph.__new__(F1RadGraph)
    torch.nn.Module.__init__(package)
    package.reward_level = "all"
    package.radgraph = lambda reports: {str(i): GRAPHS[r] for i, r in enumerate(reports)}
    _, (simple, partial, complete), _, _ = package(refs=REFS, hyps=HYPS)
    assert got == {"f1radgraph_simple": simple, "f1radgraph_partial": partial, "f1radgraph_complete": complete}
    # By hand: levels_differ, extra_entity, no entities, empty prediction, case, empty reference.
    assert got["f1radgraph_complete"] == pytest.approx([0.0, 6 / 7, 0.0, 0.0, 0.5, 0.0])
    # Every distinct non-empty text annotated exactly once.
    assert sorted(annotator.seen) == sorted({t for pair in zip(HYPS, REFS) if all(pair) for t in pair})


def test_scorer_single_level():
    got = F1RadGraphScorer(reward_level="partial", annotator=FakeAnnotator()).score(HYPS[:2], REFS[:2])
    assert got == {"f1radgraph_partial": pytest.approx([1 / 3, 6 / 7])}


def test_missing_model_offline_gives_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RadGraphModelError) as err:
        F1RadGraphScorer(model_type="radgraph", model_cache_dir=str(tmp_path / "cache"))
    message = str(err.value)
    assert "\n" not in message and "metrics.radgraph.model_cache_dir" in message and "radgraph.tar.gz" in message


def test_score_text_radgraph_family(monkeypatch):
    monkeypatch.setattr(rg, "load_radgraph_annotator", lambda *args, **kwargs: FakeAnnotator())
    samples = pl.DataFrame({"id": ["a", "b", "c"], "reference": ["pleural effusion and edema"] * 3})
    generations = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "output": ["small left effusion, edema suggestive", "", "effusion pleural edema cardiomegaly"],
            "status": ["ok", "empty_output", "ok"],
        }
    )
    rows = scoring.score_text("radgraph", samples, generations, {"reward_level": "all", "model_type": "radgraph-xl"})
    by_metric = {m: rows.filter(pl.col("metric") == m) for m in rows["metric"].unique(maintain_order=True)}
    assert list(by_metric) == ["f1radgraph_simple", "f1radgraph_partial", "f1radgraph_complete"]
    partial = by_metric["f1radgraph_partial"]
    assert partial["status"].to_list() == ["ok", "empty_output", "ok"]
    assert partial["value"][0] == pytest.approx(1 / 3) and math.isnan(partial["value"][1])
    assert partial["value"][2] == pytest.approx(6 / 7)


def test_score_text_radgraph_without_valid_samples_loads_nothing():
    samples = pl.DataFrame({"id": ["a"], "reference": ["x"]})
    generations = pl.DataFrame({"id": ["a"], "output": [""], "status": ["empty_output"]})
    rows = scoring.score_text("radgraph", samples, generations, {"reward_level": "complete"})
    assert rows["metric"].to_list() == ["f1radgraph_complete"] and rows["status"].to_list() == ["empty_output"]


def test_radgraph_encoder_path_runs_under_transformers5(tmp_path):
    """RadGraph's vendored allennlp (indexer + embedder), fed a tiny local BERT, equals BertModel itself."""
    from radgraph.allennlp.data import Vocabulary
    from radgraph.allennlp.data.dataloader import PyTorchDataLoader
    from radgraph.allennlp.data.dataset_readers import AllennlpDataset
    from radgraph.allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer
    from radgraph.allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
    from radgraph.allennlp.modules.token_embedders import PretrainedTransformerMismatchedEmbedder
    from radgraph.dygie.data.dataset_readers.dygie import DyGIEReader
    from radgraph.utils import preprocess_reports
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = ["a", "b", "1", "2", "no", "acute", "cardiopulmonary", "process", "moderate", "hiatal", "hernia"]
    (tmp_path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *words, "##s"]) + "\n"
    )
    torch.manual_seed(0)
    bert = BertModel(
        BertConfig(
            vocab_size=len(words) + 7, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
        )
    ).eval()
    bert.save_pretrained(tmp_path)
    BertTokenizerFast.from_pretrained(tmp_path).save_pretrained(tmp_path)

    rg.patch_radgraph_for_transformers5()
    indexer = PretrainedTransformerMismatchedIndexer(model_name=str(tmp_path), max_length=512)
    token_embedder = PretrainedTransformerMismatchedEmbedder(model_name=str(tmp_path), max_length=512)
    # radgraph builds the encoder from its config and takes every weight from weights.th; do the same.
    token_embedder._matched_embedder.transformer_model.load_state_dict(bert.state_dict())
    embedder = BasicTextFieldEmbedder({"bert": token_embedder}).eval()
    lines = preprocess_reports(["no acute cardiopulmonary process. moderate hiatal hernias"], "radgraph-xl")
    assert lines[0]["sentences"] == [
        ["no", "acute", "cardiopulmonary", "process", ".", "moderate", "hiatal", "hernias"]
    ]
    data = AllennlpDataset([DyGIEReader(max_span_width=3, token_indexers={"bert": indexer}).text_to_instance(lines[0])])
    data.index_with(Vocabulary())
    batch = next(iter(PyTorchDataLoader(batch_size=1, dataset=data)))
    with torch.no_grad():
        got = embedder(batch["text"], num_wrapping_dims=1)[0, 0]
        # Word pieces by hand: [CLS] no acute cardiopulmonary process . moderate hiatal hernia ##s [SEP]
        pieces = [2, 10, 11, 12, 13, 5, 14, 15, 16, len(words) + 6, 3]
        assert batch["text"]["bert"]["token_ids"][0, 0].tolist() == pieces
        hidden = bert(input_ids=torch.tensor([pieces])).last_hidden_state[0]
    want = torch.stack([*hidden[1 : 9 - 1], hidden[8:10].mean(dim=0)])  # "hernias" = mean of its two pieces
    assert got.shape == (8, 16)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
