"""MoverScore (Zhao et al., 2019), following `moverscore_v2.py` of AIPHES/emnlp19-moverscore.

Per pair: the reference and the hypothesis are tokenised into word pieces wrapped in
[CLS] ... [SEP] and encoded by a transformer; the LAST hidden layer gives one vector per word
piece. Word pieces that are subword continuations ("##..."), single punctuation characters or
stop words (none by default) are dropped, as v2's `word_mover_score` does. Each remaining word
piece carries an IDF weight, computed from the references for the reference side and from the
hypotheses for the hypothesis side:

    idf(t) = log((M + 1) / (df(t) + 1))

over the M sentences of that side (each sentence counted as a set of token ids, [CLS] and [SEP]
included, so both get weight log(1) = 0). The vectors are L2-normalised, the weights on each side
are normalised to sum 1, and the earth mover's distance between the two weighted point clouds
under the Euclidean metric gives the cost. The score is 1 / (1 + cost), as v2 returns.

Nothing heavy is imported at module level: torch, transformers and POT load on first use.
"""

from __future__ import annotations

import math
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from careval.metrics.semantic import default_model_path

_PUNCTUATION = frozenset(string.punctuation)


def idf_weights(token_id_lists: Sequence[Iterable[int]]) -> defaultdict[int, float]:
    """v2's `get_idf_dict`: log((M+1)/(df+1)) per token id; unseen ids get log(M+1).

    Each element of `token_id_lists` is one sentence's ids, special tokens included.
    """
    df: Counter = Counter()
    for ids in token_id_lists:
        df.update(set(ids))
    m = len(token_id_lists)
    weights: defaultdict[int, float] = defaultdict(lambda: math.log((m + 1) / 1))
    weights.update({t: math.log((m + 1) / (c + 1)) for t, c in df.items()})
    return weights


def transport_cost(
    ref_embeddings: np.ndarray,
    ref_weights: np.ndarray,
    hyp_embeddings: np.ndarray,
    hyp_weights: np.ndarray,
) -> float:
    """Earth mover's distance between two weighted point sets under the Euclidean metric.

    The weights are normalised to sum 1 on each side (v2's `_safe_divide`, denominator + 1e-30);
    points are used as given (MoverScorer L2-normalises them beforehand). When either side has no
    positive weight the cost is 0.0, which is what v2's `emd_with_flow` yields (zero flow).
    """
    import ot

    x = np.asarray(ref_embeddings, dtype=np.float64)
    y = np.asarray(hyp_embeddings, dtype=np.float64)
    a = np.asarray(ref_weights, dtype=np.float64).reshape(-1)
    b = np.asarray(hyp_weights, dtype=np.float64).reshape(-1)
    if x.shape[0] != a.shape[0] or y.shape[0] != b.shape[0]:
        raise ValueError("one weight per embedding row is needed on each side")
    if np.any(a < 0) or np.any(b < 0):
        raise ValueError("weights must be non-negative")
    # Zero-weight points carry no mass; dropping them leaves the optimum unchanged.
    keep_a, keep_b = a > 0, b > 0
    if not keep_a.any() or not keep_b.any():
        return 0.0
    x, a = x[keep_a], a[keep_a]
    y, b = y[keep_b], b[keep_b]
    a = a / (a.sum() + 1e-30)
    b = b / (b.sum() + 1e-30)
    # Plain differences (not the |x|^2+|y|^2-2xy expansion) so equal points are exactly 0 apart.
    dist = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
    # Exact network simplex; renormalise b onto a's total so POT's mass check never trips.
    b = b * (a.sum() / b.sum())
    return float(ot.emd2(a, b, dist, numItermax=1_000_000))  # pyright: ignore[reportArgumentType]  (POT types its scalar result loosely)


class MoverScorer:
    """MoverScore v2 per pair; the encoder is loaded once at construction.

    The paper / v2 default encoder is distilbert-base-uncased (pass its local folder as
    `model_path`); offline the default here is the bundled all-MiniLM-L6-v2. Scores are
    deterministic: sentences are encoded in input order in fixed batches, and the transport
    problem is solved exactly.

    IDF is computed over the `predictions` and `references` given to one `score` call: score a
    whole corpus at once. A pair where one side keeps no word piece with positive weight (a
    single pair, where every df = M = 1; a text of punctuation only) has no defined score: v2
    returns 1.0 there (zero flow, cost 0), which would read as a perfect match, so careval
    returns NaN and the scoring layer counts the sample with status `undefined`.
    """

    def __init__(
        self,
        model_path: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        stop_words: Iterable[str] = (),
    ) -> None:
        # Lazy: torch + transformers take seconds to import; `import careval.metrics` must not.
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.model_path = str(model_path) if model_path is not None else default_model_path()
        self.device = device
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.stop_words = frozenset(stop_words)
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_path, do_lower_case=True)
        self._model = AutoModel.from_pretrained(self.model_path)
        self._model.to(device)
        self._model.eval()
        limit = self._tokenizer.model_max_length
        max_pos = getattr(self._model.config, "max_position_embeddings", None)
        if max_pos is not None and (limit is None or limit > max_pos):
            limit = max_pos
        self._max_tokens = int(limit) - 2

    # -- tokenisation -----------------------------------------------------------------------
    def _tokens(self, text: str) -> list[str]:
        tok = self._tokenizer
        pieces = tok.tokenize(text)[: self._max_tokens]
        return [tok.cls_token, *pieces, tok.sep_token]

    def _dropped(self, token: str) -> bool:
        # v2 word_mover_score: stop words, any token containing "##", single punctuation marks.
        return token in self.stop_words or "##" in token or token in _PUNCTUATION

    # -- encoding ---------------------------------------------------------------------------
    def _embed(self, id_lists: list[list[int]]) -> list[np.ndarray]:
        """Last-layer hidden states per sentence (float64, shape [len(ids), dim])."""
        torch = self._torch
        pad = self._tokenizer.pad_token_id or 0
        out: list[np.ndarray] = []
        for start in range(0, len(id_lists), self.batch_size):
            batch = id_lists[start : start + self.batch_size]
            width = max(len(ids) for ids in batch)
            input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for i, ids in enumerate(batch):
                input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                mask[i, : len(ids)] = 1
            with torch.no_grad():
                hidden = self._model(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask.to(self.device),
                ).last_hidden_state
            hidden = hidden.double().cpu().numpy()
            out.extend(hidden[i, : len(ids)] for i, ids in enumerate(batch))
        return out

    def _side(self, texts: list[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """L2-normalised kept embeddings and their IDF weights for one side (own-corpus IDF)."""
        tokens = [self._tokens(t) for t in texts]
        ids = [self._tokenizer.convert_tokens_to_ids(ts) for ts in tokens]
        idf = idf_weights(ids)
        hidden = self._embed(ids)
        embs, weights = [], []
        for ts, tid, h in zip(tokens, ids, hidden):
            keep = [k for k, t in enumerate(ts) if not self._dropped(t)]
            e = h[keep]
            e = e / (np.linalg.norm(e, axis=-1, keepdims=True) + 1e-30)
            embs.append(e)
            weights.append(np.array([idf[tid[k]] for k in keep], dtype=np.float64))
        return embs, weights

    def score(self, predictions: list[str], references: list[str]) -> dict[str, list[float]]:
        """Per-pair {"moverscore": [1 / (1 + EMD), ...]}; IDF from each side's own list."""
        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
        if not predictions:
            return {"moverscore": []}
        ref_e, ref_w = self._side(list(references))
        hyp_e, hyp_w = self._side(list(predictions))
        scores = [
            1.0 / (1.0 + transport_cost(re, rw, he, hw)) if rw.sum() > 0 and hw.sum() > 0 else float("nan")
            for re, rw, he, hw in zip(ref_e, ref_w, hyp_e, hyp_w)
        ]
        return {"moverscore": scores}

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"MoverScorer(model_path={self.model_path!r}, device={self.device!r})"


__all__ = ["MoverScorer", "idf_weights", "transport_cost"]
