"""lm-eval's is_greedy of a (context, continuation) request: whether every continuation token is the model's most
likely next token given what precedes it (what lm-eval's loglikelihood `acc` reads, e.g. on LAMBADA).

The Backend protocol returns log-likelihoods only; this asks the hf backend's model for the flags, one request per
forward (an lm-eval loglikelihood task has one short continuation per document). Other backends have none: their
flags are NaN and the metrics that read them are counted as not scored (careval.lm_eval_scoring).
"""

from __future__ import annotations

import math
from typing import Any

from careval.backends.tokenization import encode_pair, scoring_window


def greedy_flags(backend: Any, pairs: list[tuple[str, str]]) -> list[float]:
    """1.0 where the continuation is the greedy one, 0.0 where not, NaN where the backend cannot say."""
    model, tokenizer = getattr(backend, "model", None), getattr(backend, "tokenizer", None)
    if model is None or tokenizer is None or not hasattr(backend, "max_length"):
        return [math.nan] * len(pairs)
    import torch  # here: the plan imports careval.inference, and torch takes seconds to import

    flags = []
    with torch.inference_mode():
        for context, continuation in pairs:
            ctx, cont = encode_pair(tokenizer, context, continuation, add_bos=getattr(backend, "add_bos", None))
            tokens, n_cont = scoring_window(ctx, cont, backend.max_length)
            inputs = torch.tensor([tokens[:-1]], dtype=torch.long, device=model.device)
            logits = model(input_ids=inputs, use_cache=False).logits[0, -n_cont:]
            flags.append(float(logits.argmax(-1).tolist() == tokens[-n_cont:]))
    return flags
