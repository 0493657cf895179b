"""BLEURT scores per (candidate, reference) pair, with the checkpoint loaded once per scorer."""

from __future__ import annotations

from pathlib import Path

# The BLEURT authors' recommended checkpoint (RemBERT-based, ~2 GB); BLEURT-20-D12 is the small one.
DEFAULT_BLEURT_MODEL = "lucadiliello/BLEURT-20"
TOKENIZER_FILES = ["spm.model", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]


class _SentencePieceTokens:
    """BLEURT-20's tokenizer: the SentencePiece model itself, as TensorFlow BLEURT uses it."""

    def __init__(self, model_file: Path):
        import sentencepiece

        self._sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        self.cls_id, self.sep_id = (self._special(piece, model_file) for piece in ("[CLS]", "[SEP]"))

    def _special(self, piece: str, model_file: Path) -> int:
        piece_id = self._sp.piece_to_id(piece)
        if self._sp.is_unknown(piece_id):
            raise ValueError(f"{model_file} has no '{piece}' piece; it is not a BLEURT SentencePiece model")
        return piece_id

    def __call__(self, text: str) -> list[int]:
        return self._sp.encode(text, out_type=int)


class _WordPieceTokens:
    """Older BLEURT checkpoints (bleurt-base-512, ...): BERT WordPiece from vocab.txt."""

    def __init__(self, folder: Path):
        from transformers import BertTokenizerFast  # pyright: ignore[reportAttributeAccessIssue]  (a lazy export of transformers)

        self._tok = BertTokenizerFast.from_pretrained(str(folder))
        self.cls_id, self.sep_id = self._tok.cls_token_id, self._tok.sep_token_id

    def __call__(self, text: str) -> list[int]:
        return self._tok(text, add_special_tokens=False)["input_ids"]


def _tokenizer_folder(model: str | Path) -> Path:
    if Path(model).is_dir():
        return Path(model)
    from huggingface_hub import snapshot_download

    from careval.metrics.bleurt_model import BleurtCheckpointError, missing_checkpoint_message

    try:
        return Path(snapshot_download(repo_id=str(model), allow_patterns=TOKENIZER_FILES))
    except Exception as err:  # offline, unknown repo, no network: all mean "provide it locally"
        raise BleurtCheckpointError(missing_checkpoint_message(model, err)) from err


def load_bleurt_tokenizer(model: str | Path) -> _SentencePieceTokens | _WordPieceTokens:
    """Token-id function of a checkpoint: SentencePiece when it ships spm.model, else WordPiece."""
    folder = _tokenizer_folder(model)
    if (folder / "spm.model").is_file():
        return _SentencePieceTokens(folder / "spm.model")
    if (folder / "vocab.txt").is_file() or (folder / "tokenizer.json").is_file():
        return _WordPieceTokens(folder)
    from careval.metrics.bleurt_model import BleurtCheckpointError

    raise BleurtCheckpointError(f"BLEURT checkpoint '{model}' has neither spm.model nor vocab.txt/tokenizer.json")


def truncate_pair(reference: list[int], candidate: list[int], budget: int) -> tuple[list[int], list[int]]:
    """BLEURT's _truncate_seq_pair: drop the last token of the longer side (the candidate on ties)."""
    reference, candidate = list(reference), list(candidate)
    while len(reference) + len(candidate) > budget:
        (reference if len(reference) > len(candidate) else candidate).pop()
    return reference, candidate


class BleurtScorer:
    """BLEURT per pair: [CLS] reference [SEP] candidate [SEP] -> regression head, as BLEURT encodes it.

    Pairs are run longest first in fixed batches, so the same inputs always meet the same batch
    composition (padding changes the last float bits otherwise) and give the same scores.
    """

    def __init__(
        self, model: str | Path = DEFAULT_BLEURT_MODEL, batch_size: int = 16, max_length: int = 512, device: str = "cpu"
    ) -> None:
        from careval.metrics.bleurt_model import load_bleurt_model

        self.model_name = str(model)
        self.batch_size = batch_size
        self._model = load_bleurt_model(model).to(device)  # pyright: ignore[reportArgumentType]  (transformers types Module.to oddly)
        self._tokens = load_bleurt_tokenizer(model)
        self.device = device
        self.max_length = min(max_length, self._model.config.max_position_embeddings)

    def encode(self, candidate: str, reference: str) -> tuple[list[int], list[int]]:
        """Input ids and segment ids of one pair (BLEURT's encoding.encode_example, unpadded)."""
        ref, cand = truncate_pair(self._tokens(reference), self._tokens(candidate), self.max_length - 3)
        cls_id, sep_id = self._tokens.cls_id, self._tokens.sep_id
        ids = [cls_id, *ref, sep_id, *cand, sep_id]
        segments = [0] * (len(ref) + 2) + [1] * (len(cand) + 1)
        return ids, segments

    def score(self, predictions: list[str], references: list[str]) -> list[float]:
        """BLEURT of each prediction (candidate) against its reference."""
        import torch

        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
        encoded = [self.encode(c, r) for c, r in zip(predictions, references)]
        order = sorted(range(len(encoded)), key=lambda i: (-len(encoded[i][0]), i))
        scores = [float("nan")] * len(encoded)
        with torch.no_grad():
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                width = max(len(encoded[i][0]) for i in batch)
                # Padding id 0 and segment 0, as BLEURT pads; the attention mask hides them anyway.
                ids = torch.zeros((len(batch), width), dtype=torch.long)
                segments = torch.zeros_like(ids)
                mask = torch.zeros_like(ids)
                for row, i in enumerate(batch):
                    n = len(encoded[i][0])
                    ids[row, :n] = torch.tensor(encoded[i][0])
                    segments[row, :n] = torch.tensor(encoded[i][1])
                    mask[row, :n] = 1
                logits = self._model(ids.to(self.device), mask.to(self.device), segments.to(self.device))
                for row, i in enumerate(batch):
                    scores[i] = float(logits[row, 0])
        return scores
