"""Relaxed Perplexity speed, fast vs reference scorer, on the real demo model and OLAPH-length inputs; run on a quiet
machine: `pytest -m benchmark tests/metrics/test_relaxed_perplexity_speed.py -s` (RP_BENCH_QUESTIONS=n for more).

Prints one JSON line per question: seconds of each scorer on the same kept continuations (paper defaults
l=5, s=10, max_tokens=128, stride=8), the tokens each runs through the model, and the speed-up beside that
token-count ratio (the bound a scorer limited by per-token compute could reach). Speed-ups are taken on
process CPU time (one thread, so CPU time is compute time), which a machine shared with other jobs
inflates far less than wall time; wall seconds are printed too.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

MODELS_DIR = Path(__file__).resolve().parents[2] / "resources" / "models"
MODEL = "smollm2-135m-instruct"

pytestmark = [pytest.mark.benchmark, pytest.mark.slow]


@contextmanager
def clock(into: dict, name: str):
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    into[name] = (time.process_time() - cpu, time.perf_counter() - wall)


def test_relaxed_perplexity_speed(load_rows):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from careval.backends.chat import format_prompt
    from careval.backends.tokenization import generation_tokens
    from careval.datasets import get_benchmark

    rp = importlib.import_module("careval.metrics.relaxed_perplexity")
    hf = importlib.import_module("careval.backends.hf_relaxed_perplexity")
    folder = MODELS_DIR / MODEL
    if not (folder / "config.json").is_file():
        pytest.skip(f"{folder} not prepared (run the slow tests or the prepare_model rule first)")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    options = rp.resolve_options({})
    template = get_benchmark("demo_open_qa").prompt  # the open-QA generation prompt
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for row in load_rows("medlfqa_kqa_golden", int(os.environ.get("RP_BENCH_QUESTIONS", "1"))):
            text = format_prompt(tokenizer, template.format(question=row["Question"]), True)
            q, _ = generation_tokens(tokenizer, text, add_bos=None, max_prompt_tokens=4096)
            t = tokenizer.encode(" " + row["Must_have"][0], add_special_tokens=False)

            took: dict[str, tuple[float, float]] = {}
            with clock(took, "sampling"):
                sampled = hf.sample_continuations(
                    model,
                    q,
                    s=options["s"],
                    max_tokens=options["max_tokens"],
                    top_p=options["top_p"],
                    seed=options["seed"],
                    suppress_ids=rp._eos_ids(model),
                )
            keep = rp.select_continuations(
                sampled.continuations, [sum(lp) for lp in sampled.token_logprobs], options["l"]
            )
            kept = [sampled.continuations[i] for i in keep]
            steps = rp.stride_points(options["max_tokens"], options["stride"])
            # the fast scorer on the sampler's own KV cache: only the target copies run
            with clock(took, "fast_reusing_sampling_cache"):
                reused_ll, reused_tokens = hf.score_fast(model, hf.prefix_cache_from_sample(sampled, q, keep), t, steps)
            with clock(took, "fast"):
                fast = rp.relaxed_perplexity(model, q, t, implementation="fast", continuations=kept, **options)
            with clock(took, "reference"):
                reference = rp.relaxed_perplexity(
                    model, q, t, implementation="reference", continuations=kept, **options
                )
            with_sampling = rp.relaxed_perplexity(model, q, t, implementation="fast", **options)
            assert with_sampling.continuations == tuple(kept)

            token_ratio = reference.tokens_run / fast.tokens_run
            speedup = took["reference"][0] / took["fast"][0]
            print(
                json.dumps(
                    {
                        "model": MODEL,
                        "threads": 1,
                        "question_tokens": len(q),
                        "target_tokens": len(t),
                        "kept": len(kept),
                        "steps": len(fast.steps),
                        "cpu_s": {k: round(v[0], 2) for k, v in took.items()},
                        "wall_s": {k: round(v[1], 2) for k, v in took.items()},
                        "reference_tokens": reference.tokens_run,
                        "fast_tokens": fast.tokens_run,
                        "fast_reusing_tokens": reused_tokens,
                        "speedup_cpu": round(speedup, 2),
                        "speedup_wall": round(took["reference"][1] / took["fast"][1], 2),
                        "token_ratio": round(token_ratio, 2),
                        "speedup_over_token_bound": round(speedup / token_ratio, 2),
                        "max_abs_term_diff": max(abs(a - b) for a, b in zip(fast.log_terms, reference.log_terms)),
                        "cross_entropy": round(reference.cross_entropy, 4),
                        "loadavg": round(os.getloadavg()[0], 2),
                    }
                )
            )
            assert fast.log_terms == pytest.approx(reference.log_terms, abs=1e-3)
            assert with_sampling.log_terms == pytest.approx(reference.log_terms, abs=1e-3)
            reused = rp.combine(
                rp.step_prefixes(kept, steps), reused_ll, None, len(t), n_max=options["max_tokens"], skewed=True
            )
            assert reused.log_terms == pytest.approx(reference.log_terms, abs=1e-3)
    finally:
        torch.set_num_threads(old)
