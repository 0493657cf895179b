"""The authors' `until` is honoured end to end: SmolLM2 (the demo model, hf backend) answering an
OLAPH question through careval's inference job stops where lm-eval would, before the blank line."""

from __future__ import annotations

import json

import polars as pl
import pytest

from careval.backends import Sampling, load_backend
from careval.datasets import build_benchmark, get_benchmark
from careval.inference import run_inference, sampling_for
from careval.tasks.prompts import without_instruction
from support.specs import local_model_spec

pytestmark = pytest.mark.slow

# LiveQA row 12 ("the symptoms associated with Giant Cell Vasculitis? What is the treatment?"): SmolLM2's greedy
# answer, the authors' instruction in its system turn, has a blank line within 48 tokens.
ROW = 11
MAX_NEW_TOKENS = 48


def test_inference_cuts_the_generation_at_the_authors_stop(tmp_path, shared_data, demo_model_dirs, demo_config):
    rows = [
        json.loads(line)
        for line in (shared_data / "medlfqa_live_qa" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    data = tmp_path / "live_qa.jsonl"
    data.write_text(json.dumps(rows[ROW]) + "\n", encoding="utf-8")
    entry = get_benchmark("olaph_live_qa", {"path": str(data)})
    samples_path = tmp_path / "samples.parquet"
    build_benchmark(entry, samples_path)
    spec = local_model_spec(
        "smollm2",
        demo_model_dirs["smollm2-135m-instruct"],
        dtype="float32",
        chat_template=True,
        batch_size=1,
        threads=1,
    )
    generation = {**demo_config["generation"], "max_new_tokens": MAX_NEW_TOKENS}  # the schema's stop: []
    run_inference(
        samples_path,
        entry,
        spec,
        sampling_for(entry, generation),
        tmp_path / "loglik.parquet",
        tmp_path / "gen.parquet",
        request_batch=8,
    )
    generated = pl.read_parquet(tmp_path / "gen.parquet").row(0, named=True)

    # the same prompt without a stop string, straight from the backend (the task's instruction apart: the system turn)
    prompt = without_instruction(generated["prompt"], entry.instruction)
    uncut = load_backend(spec).generate([prompt], Sampling(max_new_tokens=MAX_NEW_TOKENS), entry.instruction)[0]
    assert "\n\n" in uncut, "the uncut answer must contain the stop string for this test to mean anything"
    assert generated["output"] == uncut[: uncut.index("\n\n")]
    assert generated["output"].strip() and "\n\n" not in generated["output"]
