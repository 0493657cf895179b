"""The served model's tokenizer through its server's ``/tokenize`` (careval.backends.openai_completions, an entry with
no ``tokenizer:``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .http_client import OK, EndpointClient, EndpointError, Request


class ServerTokenizer:
    """The served model's tokenizer through the server's ``/tokenize`` and ``/detokenize`` (vLLM's, SGLang's): what
    careval's tokenisation rules (careval.backends.tokenization) ask of a transformers tokenizer. Its special tokens:
    the server's ``/tokenizer_info`` where it has one (vLLM: --enable-tokenizer-info-endpoint), else BOS as what the
    empty text encodes to. No chat template: name the tokenizer in the entry for careval's own."""

    chat_template = None

    def __init__(self, client: EndpointClient, model: str) -> None:
        self.client, self.model, self.name_or_path = client, model, f"{model} (the server's /tokenize)"
        self._memo: dict[tuple[str, bool], list[int]] = {}
        self._decoded: dict[tuple[int, ...], str] = {}
        info = self._info()
        self.bos_token = _token_text(info.get("bos_token"))
        self.eos_token = _token_text(info.get("eos_token"))
        self.bos_token_id = self._special(self.bos_token)
        self.eos_token_id = self._special(self.eos_token)
        if self.bos_token_id is None:
            empty = self.encode("", add_special_tokens=True)
            self.bos_token_id = empty[0] if empty else None
            self.bos_token = self.decode(empty[:1]) if empty else None

    def _info(self) -> dict:
        try:
            reply = self.client.post(Request("/tokenizer_info", {}, lambda p: p, method="GET"))
        except EndpointError:
            return {}  # not served: BOS from the empty text, no EOS
        return reply.value if reply.status == OK and isinstance(reply.value, dict) else {}

    def _special(self, text: str | None) -> int | None:
        if not text:
            return None
        ids = self.encode(text, add_special_tokens=False)
        return ids[0] if len(ids) == 1 else None

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        key = (text, bool(add_special_tokens))
        if key not in self._memo:
            body = {"model": self.model, "prompt": text, "add_special_tokens": bool(add_special_tokens)}
            reply = self.client.post(Request("/tokenize", body, lambda p: [int(t) for t in p["tokens"]]))
            if reply.status != OK:
                raise EndpointError(f"{self.client.base_url}/tokenize: {reply.status} for {text[:40]!r}")
            self._memo[key] = reply.value
        return list(self._memo[key])

    def decode(self, ids: Sequence[int]) -> str:
        key = tuple(int(i) for i in ids)
        if key not in self._decoded:
            body = {"model": self.model, "tokens": list(key)}
            reply = self.client.post(Request("/detokenize", body, lambda p: str(p["prompt"])))
            self._decoded[key] = reply.value if reply.status == OK else ""
        return self._decoded[key]


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):  # a transformers AddedToken as JSON
        value = value.get("content")
    return value if isinstance(value, str) and value else None
