"""Relaxed Perplexity's target log-probabilities on the hf backend, two ways, on the real demo model and OLAPH-length
inputs; run on a quiet machine: `pytest -m benchmark tests/metrics/test_relaxed_perplexity_speed.py -s`
(RP_BENCH_QUESTIONS=n for more).

* ``target_logprobs``: the backend's implementation (careval.backends.hf.relaxed): the target copies of every
  prefix in one forward over the sampler's own key/value cache of q + c (and, for explicit continuations, over one
  pass that builds that cache);
* ``shared_prefix_scorer``: the same numbers from the backend's general scorer (careval.backends.hf.scoring,
  ``score_tokens``): log P(t | q + p) as one (q + p, t) request per prefix and target, log P(p | q) as (q, p).

Prints one JSON line per question: the seconds of each (paper defaults l=5, s=10, max_tokens=128, stride=8) and the
ratio, on process CPU time (one thread, so CPU time is compute time; a machine shared with other jobs inflates it
far less than wall time). The first is the hf implementation because it is faster: a benchmark showing otherwise
would retire it (issue #39).
"""

from __future__ import annotations

import importlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.threads import torch_threads

MODELS_DIR = Path(__file__).resolve().parents[2] / "resources" / "models"
MODEL = "smollm2-135m-instruct"

pytestmark = [pytest.mark.benchmark, pytest.mark.slow]


@contextmanager
def clock(into: dict, name: str):
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    into[name] = (time.process_time() - cpu, time.perf_counter() - wall)


def test_relaxed_perplexity_speed(load_rows):
    from careval.backends.base import step_prefixes
    from careval.backends.hf.backend import HFBackend
    from careval.datasets import get_benchmark

    rp = importlib.import_module("careval.metrics.relaxed_perplexity")
    folder = MODELS_DIR / MODEL
    if not (folder / "config.json").is_file():
        pytest.skip(f"{folder} not prepared (run the slow tests or the prepare_model rule first)")
    with torch_threads():  # the backend sets its 1 thread
        backend = HFBackend.load(MODEL, str(folder), dtype="float32", threads=1, chat_template=True)
        options = rp.resolve_options({})
        template = get_benchmark("demo_open_qa").prompt  # the open-QA generation prompt
        steps = rp.stride_points(options["max_tokens"], options["stride"])
        for row in load_rows("medlfqa_kqa_golden", int(os.environ.get("RP_BENCH_QUESTIONS", "1"))):
            q, _ = backend.prompt_tokens(template.format(question=row["Question"]), 4096)
            t = backend.encode(" " + row["Must_have"][0])
            took: dict[str, tuple[float, float]] = {}
            with clock(took, "sampling"):
                sampled = backend.sample_continuations(
                    q, n=options["s"], max_tokens=options["max_tokens"], top_p=options["top_p"], seed=options["seed"]
                )
            drawn = [c.token_ids for c in sampled]
            kept = [drawn[i] for i in rp.select_continuations(drawn, [c.logprob for c in sampled], options["l"])]
            lengths = list(step_prefixes(kept, steps))
            prefixes = [p for group in step_prefixes(kept, steps).values() for p in group]
            with clock(took, "target_logprobs_on_the_sampler_cache"):
                (reused,) = backend.target_logprobs(q, kept, lengths, [t])
            with clock(took, "target_logprobs_building_the_cache"):
                (built,) = backend.target_logprobs(q, kept, lengths, [t])
            with clock(took, "shared_prefix_scorer"):
                targets = backend.score_tokens([(q + list(p), t) for p in prefixes])
                heads = backend.score_tokens([(q, list(p)) for p in prefixes if p])
            scorer = dict(zip(prefixes, targets))
            print(
                json.dumps(
                    {
                        "model": MODEL,
                        "threads": 1,
                        "question_tokens": len(q),
                        "target_tokens": len(t),
                        "kept": len(kept),
                        "prefixes": len(prefixes),
                        "cpu_s": {k: round(v[0], 2) for k, v in took.items()},
                        "wall_s": {k: round(v[1], 2) for k, v in took.items()},
                        "scorer_over_sampler_cache_cpu": round(
                            took["shared_prefix_scorer"][0] / took["target_logprobs_on_the_sampler_cache"][0], 2
                        ),
                        "scorer_over_built_cache_cpu": round(
                            took["shared_prefix_scorer"][0] / took["target_logprobs_building_the_cache"][0], 2
                        ),
                        "max_abs_diff": max(abs(reused[p].target - scorer[p]) for p in prefixes),
                        "loadavg": round(os.getloadavg()[0], 2),
                    }
                )
            )
            assert len(heads) == len(prefixes) - 1
            for p in prefixes:
                assert reused[p].target == pytest.approx(scorer[p], abs=1e-3)
                assert built[p].target == pytest.approx(scorer[p], abs=1e-3)
