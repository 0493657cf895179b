"""A job stopped after some batches resumes from the request cache, and its outputs equal an uninterrupted run's; the
batches themselves are fixed by the requests (careval.batches)."""

import hashlib
from dataclasses import replace

import polars as pl
import pytest

from careval.backends.tokenization import request_seeds
from careval.batches import batches_keeping_duplicates, contiguous_batches, input_order
from careval.datasets.registry import get_benchmark
from careval.inference import run_inference, sampling_for
from careval.jobs.repeats import repeat_sampling, run_consistency


def test_identical_prompts_share_a_batch_so_their_seeds_are_those_of_one_call():
    prompts = ["a", "b", "a", "c", "d", "a", "e"]
    batches = batches_keeping_duplicates(prompts, 2)
    assert batches == [[0, 2, 5], [1, 3], [4, 6]]
    whole = request_seeds(7, prompts)
    batched = {i: seed for batch in batches for i, seed in zip(batch, request_seeds(7, [prompts[i] for i in batch]))}
    assert [batched[i] for i in range(len(prompts))] == whole
    # plain runs of 2 would seed the second and third "a" as first copies: the same draw as the first
    naive = [seed for batch in contiguous_batches(7, 2) for seed in request_seeds(7, [prompts[i] for i in batch])]
    assert naive != whole
    rows = [i for batch in batches for i in batch]
    assert [rows[p] for p in input_order(batches)] == list(range(7))
    assert input_order([[1], [0]], rows_per_item=2) == [2, 3, 0, 1]


def test_raising_the_count_keeps_the_earlier_whole_batches():
    assert contiguous_batches(16, 8) == [list(range(8)), list(range(8, 16))]
    assert contiguous_batches(20, 8)[:2] == contiguous_batches(16, 8)  # 16 -> 20: one batch of 4 more
    prompts = [f"q{i}" for i in range(20)]
    assert batches_keeping_duplicates(prompts, 8)[:2] == batches_keeping_duplicates(prompts[:16], 8)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Crash(Exception):
    pass


def _crash_after(monkeypatch, calls: int):
    """The hf backend's generate fails on call `calls` + 1: the job stops as a kill would stop it."""
    from careval.backends.hf.backend import HFBackend

    real, count = HFBackend.generate, {"n": 0}

    def generate(self, prompts, sampling, instruction=None):
        count["n"] += 1
        if count["n"] > calls:
            raise _Crash
        return real(self, prompts, sampling, instruction)

    monkeypatch.setattr(HFBackend, "generate", generate)
    return count


def _samples(tmp_path, n):
    questions = [f"What is the usual dose of drug number {i}?" for i in range(n)]
    questions[3] = questions[1]  # a repeated question: its sampled copies must still differ after a resume
    path = tmp_path / "samples.parquet"
    pl.DataFrame(
        {
            "id": [f"s{i}" for i in range(n)],
            "benchmark": "demo_open_qa",
            "task": "open",
            "question": questions,
            "context": None,
            "options": None,
            "answer": None,
            "reference": [f"Dose {i} mg." for i in range(n)],
            "meta": "{}",
        },
        schema={
            "id": pl.String,
            "benchmark": pl.String,
            "task": pl.String,
            "question": pl.String,
            "context": pl.String,
            "options": pl.List(pl.String),
            "answer": pl.Int64,
            "reference": pl.String,
            "meta": pl.String,
        },
    ).write_parquet(path)
    return path


def _cache_line(out: str) -> tuple[int, int]:
    line = next(line for line in out.splitlines() if line.startswith("cache: "))
    words = line.split()
    return int(words[1]), int(words[6])  # "cache: H requests from the cache, C computed"


def test_inference_resumed_after_a_crash_writes_the_same_bytes(tmp_path, tiny_spec, monkeypatch, capsys):
    samples, benchmark = _samples(tmp_path, 7), get_benchmark("demo_open_qa")
    generation = sampling_for(benchmark, {"max_new_tokens": 6, "temperature": 0.8, "top_p": 0.9, "seed": 11})
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run_inference(
        samples, benchmark, tiny_spec, generation, whole / "loglik.parquet", whole / "gen.parquet", request_batch=2
    )
    spec = replace(tiny_spec, cache_dir=str(tmp_path / "cache"))
    _crash_after(monkeypatch, 2)
    with pytest.raises(_Crash):
        run_inference(
            samples, benchmark, spec, generation, resumed / "loglik.parquet", resumed / "gen.parquet", request_batch=2
        )
    assert not (resumed / "loglik.parquet").exists()
    monkeypatch.undo()
    capsys.readouterr()
    run_inference(
        samples, benchmark, spec, generation, resumed / "loglik.parquet", resumed / "gen.parquet", request_batch=2
    )
    # every log-likelihood (2 per sample) and the two generation batches before the crash ([0, 1, 3], [2, 4]: the
    # repeated question in its first copy's batch) are read; the last batch [5, 6] is computed
    assert _cache_line(capsys.readouterr().out) == (2 * 7 + 5, 2)
    for name in ("loglik.parquet", "gen.parquet"):
        assert _sha(resumed / name) == _sha(whole / name)
    outputs = pl.read_parquet(resumed / "gen.parquet")
    assert outputs["id"].to_list() == [f"s{i}" for i in range(7)]
    assert outputs["output"][1] != outputs["output"][3]  # the repeated question: two draws, not one
    assert outputs["prompt_tokens"].min() > 0 and outputs["generated_tokens"].max() <= 6  # as the backend counted


def test_consistency_resumed_after_a_crash_writes_the_same_bytes(tmp_path, tiny_spec, monkeypatch, capsys):
    samples, benchmark = _samples(tmp_path, 5), get_benchmark("demo_open_qa")
    settings = (
        repeat_sampling(
            {"max_new_tokens": 6, "temperature": 0.0, "seed": 5}, {"temperature": 1.0, "top_p": 0.9}, benchmark
        ),
    )
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run_consistency(
        samples, benchmark, tiny_spec, 3, *settings, whole / "c.parquet", whole / "cl.parquet", request_batch=2
    )
    spec = replace(tiny_spec, cache_dir=str(tmp_path / "cache"))
    _crash_after(monkeypatch, 1)
    with pytest.raises(_Crash):
        run_consistency(
            samples, benchmark, spec, 3, *settings, resumed / "c.parquet", resumed / "cl.parquet", request_batch=2
        )
    monkeypatch.undo()
    capsys.readouterr()
    run_consistency(
        samples, benchmark, spec, 3, *settings, resumed / "c.parquet", resumed / "cl.parquet", request_batch=2
    )
    # prompts 1 and 3 are one text: batches [0, 1, 3], [2, 4] of 3 answers each; the first was done before the crash.
    # The reference log-likelihoods (2 per sample) are computed once and read back for the second and third pass.
    assert _cache_line(capsys.readouterr().out) == (3 * 3 + 2 * 2 * 5, 2 * 3 + 2 * 5)
    for name in ("c.parquet", "cl.parquet"):
        assert _sha(resumed / name) == _sha(whole / name)
    frame = pl.read_parquet(resumed / "c.parquet")
    assert frame.select("id", "repeat").rows() == [(f"s{i}", k) for i in range(5) for k in range(3)]
