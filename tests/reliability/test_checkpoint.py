"""Checkpointed batches: a job stopped after some batches resumes from them, and its outputs equal an uninterrupted run's."""

import hashlib

import polars as pl
import pytest

from careval.backends.tokenization import request_seeds
from careval.checkpoint import Checkpoint, batches_keeping_duplicates, contiguous_batches, input_order, partial_dir
from careval.datasets.registry import get_benchmark
from careval.inference import run_inference, sampling_for
from careval.jobs.repeats import repeat_sampling, run_consistency

SCHEMA = {"item": pl.Int64, "square": pl.Int64}


def _square(batch):
    return pl.DataFrame({"item": batch, "square": [i * i for i in batch]}, schema=SCHEMA)


def test_a_stopped_run_resumes_from_its_finished_batches(tmp_path, capsys):
    output = tmp_path / "out.parquet"
    batches = contiguous_batches(7, 3)
    assert batches == [[0, 1, 2], [3, 4, 5], [6]]
    seen = []

    def stops_at_third(batch):
        if batch == [6]:
            raise KeyboardInterrupt  # what a kill is to the batches before it
        seen.append(batch)
        return _square(batch)

    with pytest.raises(KeyboardInterrupt):
        Checkpoint(output, "key-1", "squares").run(batches, stops_at_third, SCHEMA)
    assert sorted(p.name for p in partial_dir(output).glob("part-*")) == ["part-00000.parquet", "part-00001.parquet"]
    checkpoint = Checkpoint(output, "key-1", "squares")
    frame = checkpoint.run(batches, lambda batch: seen.append(batch) or _square(batch), SCHEMA)
    assert seen == [[0, 1, 2], [3, 4, 5], [6]]  # the third batch once, after the resume; none twice
    assert (checkpoint.resumed, checkpoint.computed) == (2, 1)
    assert frame["square"].to_list() == [i * i for i in range(7)]
    assert capsys.readouterr().out.splitlines()[-1] == "squares: 3 batches, 2 from the checkpoint, 1 computed"
    checkpoint.discard()
    assert not partial_dir(output).exists()


def test_a_checkpoint_made_for_other_work_is_not_used(tmp_path, capsys):
    output = tmp_path / "out.parquet"
    Checkpoint(output, "key-1", "squares").run([[0, 1]], _square, SCHEMA)
    checkpoint = Checkpoint(output, "key-2", "squares")
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"squares: checkpoint {partial_dir(output)} was made for other inputs or settings; starting over"
    )
    checkpoint.run([[0, 1]], _square, SCHEMA)
    assert (checkpoint.resumed, checkpoint.computed) == (0, 1)


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


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Crash(Exception):
    pass


def _crash_after(monkeypatch, calls: int):
    """The hf backend's generate fails on call `calls` + 1: the job stops as a kill would stop it."""
    from careval.backends.hf.backend import HFBackend

    real, count = HFBackend.generate, {"n": 0}

    def generate(self, prompts, sampling):
        count["n"] += 1
        if count["n"] > calls:
            raise _Crash
        return real(self, prompts, sampling)

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


def test_inference_resumed_after_a_crash_writes_the_same_bytes(tmp_path, tiny_spec, monkeypatch, capsys):
    samples, benchmark = _samples(tmp_path, 7), get_benchmark("demo_open_qa")
    generation = sampling_for(benchmark, {"max_new_tokens": 6, "temperature": 0.8, "top_p": 0.9, "seed": 11})
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run_inference(
        samples, benchmark, tiny_spec, generation, whole / "loglik.parquet", whole / "gen.parquet", checkpoint_every=2
    )
    _crash_after(monkeypatch, 2)
    with pytest.raises(_Crash):
        run_inference(
            samples,
            benchmark,
            tiny_spec,
            generation,
            resumed / "loglik.parquet",
            resumed / "gen.parquet",
            checkpoint_every=2,
        )
    assert not (resumed / "loglik.parquet").exists()
    monkeypatch.undo()
    capsys.readouterr()
    run_inference(
        samples,
        benchmark,
        tiny_spec,
        generation,
        resumed / "loglik.parquet",
        resumed / "gen.parquet",
        checkpoint_every=2,
    )
    log = capsys.readouterr().out.splitlines()
    assert "demo_open_qa log-likelihoods: 4 batches, 4 from the checkpoint, 0 computed" in log
    assert "demo_open_qa generations: 3 batches, 2 from the checkpoint, 1 computed" in log
    for name in ("loglik.parquet", "gen.parquet"):
        assert _sha(resumed / name) == _sha(whole / name)
    assert not list(resumed.glob("*.partial"))
    outputs = pl.read_parquet(resumed / "gen.parquet")
    assert outputs["id"].to_list() == [f"s{i}" for i in range(7)]
    assert outputs["output"][1] != outputs["output"][3]  # the repeated question: two draws, not one


def test_consistency_resumed_after_a_crash_writes_the_same_bytes(tmp_path, tiny_spec, monkeypatch, capsys):
    samples, benchmark = _samples(tmp_path, 5), get_benchmark("demo_open_qa")
    settings = (
        repeat_sampling(
            {"max_new_tokens": 6, "temperature": 0.0, "seed": 5}, {"temperature": 1.0, "top_p": 0.9}, benchmark
        ),
    )
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run_consistency(
        samples, benchmark, tiny_spec, 3, *settings, whole / "c.parquet", whole / "cl.parquet", checkpoint_every=2
    )
    _crash_after(monkeypatch, 1)
    with pytest.raises(_Crash):
        run_consistency(
            samples,
            benchmark,
            tiny_spec,
            3,
            *settings,
            resumed / "c.parquet",
            resumed / "cl.parquet",
            checkpoint_every=2,
        )
    monkeypatch.undo()
    capsys.readouterr()
    run_consistency(
        samples, benchmark, tiny_spec, 3, *settings, resumed / "c.parquet", resumed / "cl.parquet", checkpoint_every=2
    )
    # prompts 1 and 3 are one text: batches [0, 1, 3], [2, 4]; the first was done before the crash
    assert "demo_open_qa consistency samples: 2 batches, 1 from the checkpoint, 1 computed" in capsys.readouterr().out
    for name in ("c.parquet", "cl.parquet"):
        assert _sha(resumed / name) == _sha(whole / name)
    frame = pl.read_parquet(resumed / "c.parquet")
    assert frame.select("id", "repeat").rows() == [(f"s{i}", k) for i in range(5) for k in range(3)]
