"""The one protocol every model runtime implements (transformers, vLLM, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Sampling:
    """Decoding settings shared by every backend; greedy by default (temperature 0).

    temperature == 0 means greedy decoding (top_p and seed are then ignored).
    temperature > 0 samples; ``seed`` makes a call reproducible: the same prompts with the
    same Sampling give the same texts on every rerun of the same backend and model.
    ``stop``: the completion is cut before the first occurrence of any of these strings.
    """

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 1234
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A list (e.g. straight from YAML) would make the frozen dataclass unhashable.
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.max_new_tokens < 1:
            raise ValueError(f"Sampling.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"Sampling.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"Sampling.top_p must be in (0, 1], got {self.top_p}")
        if any(not s for s in self.stop):
            raise ValueError("Sampling.stop must not contain empty strings")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@runtime_checkable
class Backend(Protocol):
    name: str
    max_length: int

    def generate(self, prompts: list[str], sampling: Sampling) -> list[str]:
        """One completion per prompt (text only, prompt stripped); chat templates are applied inside (see chat.py)."""
        ...

    def loglikelihood(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Natural-log sum over the continuation's tokens given the context, per (context, continuation)."""
        ...

    def loglikelihood_rolling(self, texts: list[str]) -> list[float]:
        """Natural-log likelihood of each whole text (lm-eval's rolling windows, BOS as the first context)."""
        ...
