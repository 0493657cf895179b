"""Speed of the judge's two passes on CPU (issue 15): careval's generate (prompts prefilled from their
shared prefixes, a cache growing in place) and the score distribution read on top of the remembered
prompts, against transformers' own generate and a second full prefill, in one process.

SmolLM2-135M as the demo's judge (prometheus-eval's prompts and system prompt), float32, 1 thread,
4 demo answers x 2 rubrics, 48 new tokens. Excluded by default (pyproject addopts); run with
``pytest -m benchmark -s tests/backends/test_judge_speed.py``. Wall times are printed, not asserted;
the texts are asserted identical and the probabilities equal. Beside each ratio: the prompt tokens
each path runs.
"""

from __future__ import annotations

import json
import time

import pytest
from test_prefix_memo import plain_generate

from careval.backends import Sampling
from careval.backends.hf.backend import HFBackend
from careval.backends.tokenization import generation_tokens
from careval.metrics.judge import judge_prompt, rubric_text
from careval.metrics.judge_distribution import score_distributions

pytestmark = pytest.mark.benchmark


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def prefill_tokens(backend, prompts) -> tuple[int, int]:
    """Prompt tokens run (no padding): each prompt whole, and each past its longest prefix shared with an earlier one."""
    room = backend.max_length
    ids = [
        generation_tokens(backend.tokenizer, backend.format(p), add_bos=backend.add_bos, max_prompt_tokens=room)[0]
        for p in prompts
    ]
    ids.sort(key=len, reverse=True)  # generate's order
    shared = 0
    for k, tokens in enumerate(ids):
        best = 0
        for other in ids[:k]:
            n = 0
            while n < min(len(tokens), len(other)) and tokens[n] == other[n]:
                n += 1
            best = max(best, n)
        shared += len(tokens) - best
    return sum(map(len, ids)), shared


def test_judge_passes_speed(smollm2_dir, repo_root):
    from prometheus_eval.prompts import ABS_SYSTEM_PROMPT

    judge = HFBackend.load(
        "judge",
        str(smollm2_dir),
        dtype="float32",
        batch_size=16,
        threads=1,
        chat_template=True,
        system_prompt=ABS_SYSTEM_PROMPT,
    )
    rows = [json.loads(line) for line in (repo_root / "resources/demo/demo_open_qa.jsonl").read_text().splitlines()]
    prompts = [
        judge_prompt(r["question"], r["answer"][:160], r["answer"], rubric_text(rubric)[1])
        for r in rows[:4]
        for rubric in ("helpfulness", "factual_validity")
    ]
    sampling = Sampling(max_new_tokens=48)
    judge.generate(prompts[:1], Sampling(max_new_tokens=2))  # warm-up
    plain, t_plain = timed(lambda: plain_generate(judge, prompts, sampling))
    ours, t_ours = timed(lambda: judge.generate(prompts, sampling))
    assert ours == plain
    remembered, t_remembered = timed(lambda: score_distributions(judge, prompts, ours))
    judge._memo.clear()
    full, t_full = timed(lambda: score_distributions(judge, prompts, ours))
    assert [p for ps in remembered for p in ps] == pytest.approx([p for ps in full for p in ps], abs=1e-4)
    whole, shared = prefill_tokens(judge, prompts)
    print(
        f"\njudge generate ({len(prompts)} prompts, {sampling.max_new_tokens} new tokens): transformers "
        f"{t_plain:.1f}s, careval {t_ours:.1f}s -> {t_plain / t_ours:.2f}x; prompt tokens {whole} -> {shared} "
        f"(bound on the prefill {whole / shared:.2f}x)"
        f"\nscore distribution: a second prefill {t_full:.1f}s, on the remembered prompts {t_remembered:.1f}s "
        f"-> {t_full / t_remembered:.2f}x"
        f"\nboth passes: {t_plain + t_full:.1f}s -> {t_ours + t_remembered:.1f}s "
        f"({(t_plain + t_full) / (t_ours + t_remembered):.2f}x)"
    )
