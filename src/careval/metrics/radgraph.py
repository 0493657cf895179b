"""F1-RadGraph: F1 between the entity/relation graphs RadGraph extracts from a summary and its reference.

The reward is ported from the `radgraph` package 0.1.18 (radgraph/rewards.py, MIT licence,
Jean-Benoit Delbrouck, https://github.com/Stanford-AIMI/radgraph) so that it is a pure, tested
function over annotations; the extraction model is the package's own `RadGraph` (it installs and
imports under transformers 5 and torch 2.13; two tokenizer methods its vendored allennlp calls are
restored by `patch_radgraph_for_transformers5`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

REWARD_LEVELS = ("simple", "partial", "complete")
# The package's default extractor, and the archive of each in the hub repo StanfordAIMI/RRG_scorers.
DEFAULT_MODEL_TYPE = "radgraph-xl"
MODEL_ARCHIVES = {
    "radgraph": "radgraph.tar.gz",
    "radgraph-xl": "radgraph-xl.tar.gz",
    "modern-radgraph-xl": "modern-radgraph-xl.tar.gz",
    "echograph": "echograph.tar.gz",
}

# One annotation = RadGraph's output for one report: {"entities": {id: {"tokens", "label", "relations":
# [[relation_label, target_entity_id], ...], ...}}, ...}.
Annotation = dict
Annotator = Callable[[list[str]], list[Annotation]]


def reward_levels(reward_level: str) -> tuple[str, ...]:
    """'simple' | 'partial' | 'complete' -> that level; 'all' -> the three."""
    if reward_level == "all":
        return REWARD_LEVELS
    if reward_level not in REWARD_LEVELS:
        raise ValueError(f"metrics.radgraph.reward_level must be one of {REWARD_LEVELS} or 'all', not '{reward_level}'")
    return (reward_level,)


def metric_name(level: str) -> str:
    return f"f1radgraph_{level}"


def _graph_items(annotation: Annotation, level: str) -> set[tuple]:
    entities = annotation["entities"]
    items: set[tuple] = set()
    for entity in entities.values():
        relations = entity["relations"]
        if level == "simple" or not relations:
            items.add((entity["tokens"], entity["label"]))
        elif level == "partial":
            items.add((entity["tokens"], entity["label"], True))
        else:
            # As the package does: tokens are lower-cased in relation triples only, not for lone entities.
            items.update(
                (entity["tokens"].lower(), entity["label"], relation, entities[target]["tokens"].lower())
                for relation, target in relations
            )
    return items


def _set_f1(hypothesis: set, reference: set) -> float:
    # Same operations in the same order as the package, so results are bit-identical.
    precision = sum(1 for x in hypothesis if x in reference) / len(hypothesis) if hypothesis else 0.0
    recall = sum(1 for x in reference if x in hypothesis) / len(reference) if reference else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def radgraph_reward(hypothesis: Annotation, reference: Annotation, level: str) -> float:
    """F1-RadGraph of one pair of annotations at one reward level (radgraph.rewards.compute_reward).

    simple: entities (tokens, label) match; partial: entities match and agree on having relations;
    complete: entities without relations match, and every (entity, relation, target) triple matches.
    A graph without entities on either side scores 0.
    """
    if level not in REWARD_LEVELS:
        raise ValueError(f"unknown F1-RadGraph reward level '{level}'")
    if not hypothesis["entities"] or not reference["entities"]:
        return 0.0
    return _set_f1(_graph_items(hypothesis, level), _graph_items(reference, level))


class RadGraphModelError(RuntimeError):
    """The RadGraph extraction model (or its BERT tokenizer) is not available."""


def patch_radgraph_for_transformers5() -> None:
    """Give the tokenizers radgraph's vendored allennlp loads the two methods transformers 5 removed.

    Without this, building RadGraph fails with `AttributeError: BertTokenizer has no attribute
    encode_plus` (and then `build_inputs_with_special_tokens`). `encode_plus` was the single-input
    form of `__call__`; `build_inputs_with_special_tokens` is BERT's [CLS] a [SEP] (b [SEP]), which
    is what every RadGraph extractor's BERT-family tokenizer did.
    """
    from radgraph.allennlp.common import cached_transformers

    if getattr(cached_transformers.get_tokenizer, "_careval_patched", False):
        return
    original = cached_transformers.get_tokenizer

    def get_tokenizer(model_name: str, **kwargs):
        tokenizer = original(model_name, **kwargs)
        if not hasattr(tokenizer, "encode_plus"):
            tokenizer.encode_plus = tokenizer.__call__
        if not hasattr(tokenizer, "build_inputs_with_special_tokens"):
            cls_id: int | None = tokenizer.cls_token_id  # pyright: ignore[reportAssignmentType]
            sep_id: int | None = tokenizer.sep_token_id  # pyright: ignore[reportAssignmentType]
            if cls_id is None or sep_id is None:
                raise RadGraphModelError(f"RadGraph tokenizer '{model_name}' has no [CLS]/[SEP] tokens")

            def build_inputs_with_special_tokens(ids_0: list[int], ids_1: list[int] | None = None) -> list[int]:
                first = [cls_id, *ids_0, sep_id]
                return first if ids_1 is None else [*first, *ids_1, sep_id]

            tokenizer.build_inputs_with_special_tokens = build_inputs_with_special_tokens  # pyright: ignore[reportAttributeAccessIssue]  (a method patched on this instance)
        return tokenizer

    get_tokenizer._careval_patched = True
    cached_transformers.get_tokenizer = get_tokenizer


def load_radgraph_annotator(
    model_type: str = DEFAULT_MODEL_TYPE,
    model_cache_dir: str | None = None,
    tokenizer_cache_dir: str | None = None,
    device: str = "cpu",
) -> Annotator:
    """The package's RadGraph extractor, loaded once, as texts -> annotations (downloads it if it can)."""
    if model_type not in MODEL_ARCHIVES:
        raise ValueError(f"metrics.radgraph.model_type must be one of {sorted(MODEL_ARCHIVES)}, not '{model_type}'")
    from radgraph import RadGraph

    patch_radgraph_for_transformers5()
    cuda = -1 if device == "cpu" else int(device.partition(":")[2] or 0)
    try:
        model = RadGraph(
            model_type=model_type, cuda=cuda, model_cache_dir=model_cache_dir, tokenizer_cache_dir=tokenizer_cache_dir
        )
    except Exception as err:  # the package raises bare Exception when the download fails
        first_line = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise RadGraphModelError(
            f"RadGraph model '{model_type}' could not be loaded ({first_line}); extract {MODEL_ARCHIVES[model_type]} "
            f"from the hub repo StanfordAIMI/RRG_scorers into <folder>/{model_type}/ and set "
            "metrics.radgraph.model_cache_dir to <folder> (the tokenizer and config of the BERT encoder its config.json "
            "names must be in the Hugging Face cache too)"
        ) from err

    def annotate(texts: list[str]) -> list[Annotation]:
        import torch

        with torch.no_grad():
            found = model(list(texts))
        return [found[str(i)] for i in range(len(texts))]

    return annotate


class F1RadGraphScorer:
    """Per-pair F1-RadGraph at one reward level (or all three), with RadGraph loaded once.

    Pairs with an empty prediction or reference score 0, as the package's F1RadGraph does. Each
    distinct text is annotated once, in sorted order, in chunks of `batch_size` texts.
    """

    def __init__(
        self,
        reward_level: str = "partial",
        model_type: str = DEFAULT_MODEL_TYPE,
        batch_size: int = 16,
        model_cache_dir: str | None = None,
        tokenizer_cache_dir: str | None = None,
        device: str = "cpu",
        annotator: Annotator | None = None,
    ) -> None:
        self.levels = reward_levels(reward_level)
        self.batch_size = batch_size
        self._annotate = annotator or load_radgraph_annotator(model_type, model_cache_dir, tokenizer_cache_dir, device)

    def annotations(self, texts: Sequence[str]) -> dict[str, Annotation]:
        from tqdm.auto import tqdm

        unique = sorted(set(texts))
        found: dict[str, Annotation] = {}
        for start in tqdm(range(0, len(unique), self.batch_size), desc="radgraph: annotate", unit="batch"):
            chunk = unique[start : start + self.batch_size]
            found.update(zip(chunk, self._annotate(chunk)))
        return found

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> dict[str, list[float]]:
        """{"f1radgraph_<level>": per-pair values} for each configured level."""
        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
        scored = [i for i, (p, r) in enumerate(zip(predictions, references)) if p and r]
        graphs = self.annotations([predictions[i] for i in scored] + [references[i] for i in scored])
        values = {metric_name(level): [0.0] * len(predictions) for level in self.levels}
        for i in scored:
            hypothesis, reference = graphs[predictions[i]], graphs[references[i]]
            for level in self.levels:
                values[metric_name(level)][i] = radgraph_reward(hypothesis, reference, level)
        return values
