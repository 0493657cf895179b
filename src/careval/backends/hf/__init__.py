"""Backend ``hf``: a causal LM through transformers, on the CPU or one GPU (backend.py, and one module per concern).

Registering it imports neither torch nor transformers: the plan reads its capabilities before any job runs.
"""

from __future__ import annotations

from typing import Any

from ..base import Capabilities
from ..registry import register_backend

CAPABILITIES = Capabilities(prompt_logprobs=True, top_logprobs=True, chat_template=True, max_gpus=1)


@register_backend("hf", CAPABILITIES)
def load(spec: Any) -> Any:
    from .backend import HFBackend

    return HFBackend.from_spec(spec)
