"""A context longer than the model's window (issue 46): cut as lm-eval cuts it (the left, the end kept), counted per
request (`cut_tokens`), its `tokens` the ones read, and one warning line per job naming the count; the same read from
the request cache."""

from __future__ import annotations

import json

import polars as pl
from transformers import AutoTokenizer

from careval.backends.tokenization import encode, encode_pair
from careval.datasets import build_benchmark, get_benchmark
from careval.inference import run_inference, sampling_for
from support.specs import local_model_spec

WINDOW, NEW = 32, 4  # the model's max_length, and the generation's max_new_tokens


def test_a_long_context_is_cut_from_the_left_counted_and_warned_once(tmp_path, tiny_model_dir, capsys):
    rows = [
        {"id": "long", "q": "the patient reports pain " * 40, "a": "rest"},
        {"id": "short", "q": "fever?", "a": "rest"},
    ]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    entry = get_benchmark(
        "long_qa",
        {
            "task": "open",
            "path": str(tmp_path / "qa.jsonl"),
            "fields": {"id": "id", "question": "q", "reference": "a"},
            "prompt": "{question}\nAnswer:",
        },
    )
    build_benchmark(entry, tmp_path / "samples.parquet")
    spec = local_model_spec("tiny", tiny_model_dir, cache_dir=tmp_path / "cache", max_length=WINDOW, dtype="float32")
    sampling = sampling_for(entry, {"max_new_tokens": NEW, "temperature": 0.0, "seed": 1})
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts = {row["id"]: f"{row['q']}\nAnswer:" for row in rows}
    total = {key: len(encode(tokenizer, prompt, None)) for key, prompt in prompts.items()}
    assert total["long"] > WINDOW > total["short"]
    for run in ("computed", "read"):
        out = tmp_path / run
        run_inference(
            tmp_path / "samples.parquet",
            entry,
            spec,
            sampling,
            out / "loglik.parquet",
            out / "gen.parquet",
            request_batch=8,
            record=out / "requests.json",
        )
        gen = {r["id"]: r for r in pl.read_parquet(out / "gen.parquet").iter_rows(named=True)}
        room = WINDOW - NEW
        assert (gen["long"]["prompt_tokens"], gen["long"]["cut_tokens"]) == (room, total["long"] - room)
        assert (gen["short"]["prompt_tokens"], gen["short"]["cut_tokens"]) == (total["short"], 0)
        loglik = pl.read_parquet(out / "loglik.parquet")
        given = loglik.filter(pl.col("kind") != "reference").sort("id")  # the reference given the question
        for row in given.iter_rows(named=True):
            ctx, cont = encode_pair(tokenizer, row["context"], row["continuation"], add_bos=None)
            read = min(len(ctx) + len(cont), WINDOW + 1)  # scoring_window: the last max_length + 1 tokens
            assert (row["tokens"], row["cut_tokens"]) == (read, len(ctx) + len(cont) - read)
        assert loglik.filter(pl.col("kind") == "reference")["cut_tokens"].to_list() == [0, 0]  # rolling: never cut
        cut_requests = 1 + int((given["cut_tokens"] > 0).sum())
        cut_tokens = gen["long"]["cut_tokens"] + int(given["cut_tokens"].sum())
        warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("careval warning")]
        assert warnings == [
            f"careval warning: {cut_requests} requests of tiny had a context longer than its window: left-truncated "
            f"as lm-eval does (the end kept), {cut_tokens} tokens cut; their rows' cut_tokens say how many, their "
            "tokens count those read"
        ], run
        counts = json.loads((out / "requests.json").read_text())
        assert (counts["cut_requests"], counts["cut_tokens"]) == (cut_requests, cut_tokens)
        assert counts["computed"] == (0 if run == "read" else counts["requests"])
