"""Cost per result: sums of the jobs' logged times (Snakemake benchmark files) and of their request counts (the
requests read from the request cache, those computed, and the computed ones' tokens: only computed work is spent)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from careval.analysis.cost import CostError, CostJob, efficiency_frontier, write_cost
from careval.analysis.figures.comparisons import cache_line
from careval.backends import Backend, Capabilities
from careval.backends.base import Usage
from careval.backends.cached import CachedBackend
from careval.backends.registry import register_backend
from careval.request_cache import RequestCache
from careval.schemas import COST_SCHEMA
from support.specs import local_model_spec


def benchmark_file(path: Path, seconds: list[float]) -> None:
    """A Snakemake benchmark file as Snakemake writes it (one row per repeat)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    rows = "".join(f"{s}\t0:00:01\t67.89\t485.20\t41.15\t47.27\t0.00\t0.00\t0.00\t0.35\n" for s in seconds)
    path.write_text(header + rows)


def requests_file(path: Path, cached: int, computed: int, prompt: int, generated: int) -> None:
    """An LLM job's request counts, as careval.backends.cached.CachedBackend.finish writes them beside its log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = {"cached": cached, "computed": computed, "prompt_tokens": prompt, "generated_tokens": generated}
    path.write_text(json.dumps({"requests": cached + computed, **counts}))


def job(models=("m1", "m2"), benchmarks=("qa", "mcqa"), gpus=None, cache_dir=None) -> CostJob:
    gpus = gpus or {"infer_open": {"m1": 2, "m2": 1}, "infer_closed": {"m1": 2, "m2": 1}, "judge": {"m1": 4, "m2": 4}}
    gpus["judge_repeats"] = gpus["judge"]
    return CostJob(models=models, benchmarks=benchmarks, gpus=gpus, cache_dir=cache_dir)


def test_times_and_gpu_seconds_sum_the_jobs_logged_times(tmp_path):
    root = tmp_path / "benchmarks"
    benchmark_file(root / "infer_open/m1/qa.tsv", [10.5])
    benchmark_file(root / "judge/m1/qa.tsv", [3.0, 4.0])  # benchmark: repeat(..., 2)
    benchmark_file(root / "judge_repeats/consistency/m1/qa.tsv", [1.25])
    benchmark_file(root / "infer_closed/m2/mcqa.tsv", [7.0])
    benchmark_file(root / "infer_closed/other/mcqa.tsv", [99.0])  # a model not in the run
    table = write_cost(root, tmp_path / "logs", job(), tmp_path / "cost.parquet")
    row = table.filter((pl.col("model") == "m1") & (pl.col("benchmark") == "qa")).row(0, named=True)
    assert row["wall_seconds"] == pytest.approx(10.5 + 3.0 + 4.0 + 1.25)
    # GPU-seconds: each job's GPUs x its wall time (judge_repeats takes the judge's GPUs)
    assert row["gpu_seconds"] == pytest.approx(2 * 10.5 + 4 * (3.0 + 4.0) + 4 * 1.25)
    assert row["jobs"] == "infer_open,judge,judge_repeats/consistency"
    m2 = table.filter((pl.col("model") == "m2") & (pl.col("benchmark") == "mcqa")).row(0, named=True)
    assert (m2["wall_seconds"], m2["gpu_seconds"]) == (7.0, 7.0)
    assert (
        table.height == 4
        and table.filter(pl.col("model") == "m2", pl.col("benchmark") == "qa")["wall_seconds"][0] is None
    )
    assert pl.read_parquet(tmp_path / "cost.parquet").equals(table)


def test_a_broken_benchmark_file_is_one_line(tmp_path):
    path = tmp_path / "benchmarks/infer_open/m1/qa.tsv"
    path.parent.mkdir(parents=True)
    path.write_text("no\tseconds\n1\t2\n")
    with pytest.raises(CostError, match=r"infer_open/m1/qa.tsv: not a Snakemake benchmark file"):
        write_cost(tmp_path / "benchmarks", tmp_path / "logs", job(), tmp_path / "cost.parquet")


def test_requests_and_tokens_count_only_what_the_jobs_computed(tmp_path):
    logs = tmp_path / "logs"
    requests_file(logs / "infer_open/m1/qa.requests.json", cached=30, computed=2, prompt=100, generated=40)
    requests_file(logs / "judge/smol/m1/qa.requests.json", cached=8, computed=0, prompt=0, generated=0)
    requests_file(logs / "relaxed_perplexity/m1/qa.requests.json", cached=0, computed=4, prompt=900, generated=0)
    requests_file(logs / "infer_closed/other/mcqa.requests.json", cached=1, computed=1, prompt=1, generated=1)
    (logs / "infer_open/m1/qa.log").write_text("cache: 30 requests from the cache, 2 computed\n")  # not read
    cache = RequestCache(tmp_path / "cache")
    cache.put("ab1", {"value": [1.0]})
    table = write_cost(
        tmp_path / "none", logs, job(cache_dir=str(tmp_path / "cache")), tmp_path / "c.parquet", tmp_path / "rc.parquet"
    )
    row = table.filter((pl.col("model") == "m1") & (pl.col("benchmark") == "qa")).row(0, named=True)
    assert (row["cached_requests"], row["computed_requests"]) == (38, 6)
    assert (row["prompt_tokens"], row["generated_tokens"]) == (1000, 40)  # the computed requests' tokens only
    assert table.filter(pl.col("model") == "m2")["cached_requests"].to_list() == [None, None]  # no LLM job ran
    size = pl.read_parquet(tmp_path / "rc.parquet").row(0, named=True)
    assert size == {"directory": str(tmp_path / "cache"), "entries": 1, "bytes": cache.stats().bytes}
    line = cache_line(table, pl.read_parquet(tmp_path / "rc.parquet"))
    assert line.startswith("LLM requests: 6 computed, 38 read from the request cache (86%); the cache (")
    assert line.endswith(": 1 entries, 0.0 MB")
    off = write_cost(tmp_path / "none", logs, job(), tmp_path / "c2.parquet", tmp_path / "rc2.parquet")
    assert cache_line(off, pl.read_parquet(tmp_path / "rc2.parquet")).endswith(
        "request cache off (resources.cache: false)"
    )
    requests_file(logs / "judge/smol/m1/qa.requests.json", cached=8, computed=0, prompt=0, generated=0)
    (logs / "judge/smol/m1/qa.requests.json").write_text("{")
    with pytest.raises(CostError, match=r"judge/smol/m1/qa.requests.json: not a job's request counts"):
        write_cost(tmp_path / "none", logs, job(), tmp_path / "c.parquet")


def test_a_served_models_tokens_are_money_at_its_price(tmp_path):
    """The cost column: each job's computed tokens at the price of the served model it ran (the evaluated model on its
    own jobs, the judge on the judge's); null where no job of the result had a price."""
    logs = tmp_path / "logs"
    requests_file(logs / "infer_open/m1/qa.requests.json", cached=3, computed=2, prompt=1000, generated=400)
    requests_file(logs / "judge/m1/qa.requests.json", cached=0, computed=2, prompt=3000, generated=100)
    requests_file(logs / "infer_open/m2/qa.requests.json", cached=0, computed=2, prompt=500, generated=50)
    priced = job()
    priced = CostJob(
        models=priced.models,
        benchmarks=priced.benchmarks,
        gpus=priced.gpus,
        prices={"infer_open": {"m1": [2.5, 10.0]}, "judge": {"m1": [1.0, 2.0], "m2": [1.0, 2.0]}},
    )
    table = write_cost(tmp_path / "none", logs, priced, tmp_path / "c.parquet")
    costs = {(r["model"], r["benchmark"]): r["cost"] for r in table.iter_rows(named=True)}
    # m1 on qa: 1000 x 2.5 + 400 x 10 (its answers) + 3000 x 1 + 100 x 2 (the judge's grading), per million
    assert costs["m1", "qa"] == pytest.approx((1000 * 2.5 + 400 * 10 + 3000 * 1 + 100 * 2) / 1e6)
    assert costs["m2", "qa"] is None and costs["m1", "mcqa"] is None  # a local model's result, or none at all


def test_efficiency_frontier_by_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        cost, quality = rng.integers(0, 6, 8).astype(float), rng.integers(0, 6, 8).astype(float)
        for higher in (True, False):
            q = quality if higher else -quality
            expected = [
                not any(cost[j] <= cost[i] and q[j] >= q[i] and (cost[j] < cost[i] or q[j] > q[i]) for j in range(8))
                for i in range(8)
            ]
            assert efficiency_frontier(cost, quality, higher).tolist() == expected


def test_a_result_remade_from_the_cache_costs_what_it_cost(tmp_path):
    """Issue 46: after m1's results were deleted and remade from the cache, this run computed nothing for it (its
    tokens 0, its wall time small), but the table says beside it what the results needed, as when they were computed:
    the two models' costs stay comparable. A record that predates the needed counts leaves them null, not 0."""
    capabilities = Capabilities(prompt_logprobs=True, top_logprobs=False, chat_template=False, max_gpus=0)

    @register_backend("cost-test", capabilities)
    class Engine(Backend):
        backend = "cost-test"

        def __init__(self, spec):
            self.name, self.max_length = spec.name, 64

        def generate(self, prompts, sampling, instruction=None):
            return [""] * len(prompts)

        def loglikelihood(self, pairs):
            self.last_usage = [Usage(len(c) + len(x), 0) for c, x in pairs]
            return [-1.0] * len(pairs)

    (tmp_path / "w").mkdir()
    spec = replace(local_model_spec("m1", tmp_path / "w", cache_dir=tmp_path / "cache"), backend="cost-test")
    logs = tmp_path / "logs"
    pairs = [("Question?", " yes"), ("Question?", " no")]
    for run in ("first", "remade"):
        record = tmp_path / run / "infer_closed/m1/mcqa.requests.json"
        with CachedBackend(spec, spec.cache_dir, record) as backend:
            backend.loglikelihood(pairs)
    first = json.loads((tmp_path / "first/infer_closed/m1/mcqa.requests.json").read_text())
    (logs / "infer_closed/m1").mkdir(parents=True)
    (logs / "infer_closed/m1/mcqa.requests.json").write_text(
        (tmp_path / "remade/infer_closed/m1/mcqa.requests.json").read_text()
    )
    requests_file(logs / "infer_closed/m2/mcqa.requests.json", cached=0, computed=2, prompt=26, generated=0)
    table = write_cost(tmp_path / "none", logs, job(benchmarks=("mcqa",)), tmp_path / "c.parquet")
    m1 = table.filter(pl.col("model") == "m1").row(0, named=True)
    assert (m1["cached_requests"], m1["computed_requests"], m1["prompt_tokens"]) == (2, 0, 0)  # this run: nothing
    assert m1["needed_prompt_tokens"] == first["prompt_tokens"] == len("Question? yes") + len("Question? no")
    assert m1["needed_seconds"] == pytest.approx(first["needed_seconds"]) and m1["needed_seconds"] > 0
    assert (m1["needed_gpu_seconds"], m1["uncosted_requests"], m1["cut_requests"]) == (0.0, 0, 0)
    m2 = table.filter(pl.col("model") == "m2").row(0, named=True)
    assert m2["prompt_tokens"] == 26 and m2["needed_prompt_tokens"] is None  # an older record: not known


def _cost_rows(rows) -> pl.DataFrame:
    """A cost table (COST_SCHEMA) of (model, benchmark, wall_seconds, needed_seconds, computed_requests) rows."""
    keys = ("model", "benchmark", "wall_seconds", "needed_seconds", "computed_requests")
    return (
        pl.DataFrame([dict(zip(keys, row)) for row in rows])
        .with_columns(pl.lit(None).alias(column) for column in COST_SCHEMA if column not in keys)
        .select(list(COST_SCHEMA))
        .cast(COST_SCHEMA)
    )


def test_a_model_whose_records_predate_the_needed_seconds_is_not_drawn_at_zero():
    """A result made before careval kept the engine's seconds leaves its model's total unknown: the cost page names it
    under the plot instead of drawing it at 0 (as if it cost nothing); a result no LLM job made needed none. With
    every model unknown, the page plots this run's wall seconds and says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from careval.analysis.cost import model_totals
    from careval.analysis.figures.comparisons import cost_figure

    cost = _cost_rows(
        [
            ("m1", "qa", 10.0, 4.0, 2),
            ("m1", "mcqa", 5.0, 1.0, 2),
            ("m2", "qa", 20.0, None, 2),  # its LLM job's record predates the needed seconds
            ("m2", "mcqa", 7.0, 3.0, 2),
            ("m3", "qa", 8.0, 2.0, 2),
            ("m3", "mcqa", 1.0, None, None),  # no LLM job made it
        ]
    )
    totals = dict(model_totals(cost).select("model", "needed_seconds").iter_rows())
    assert totals == {"m1": 5.0, "m2": None, "m3": 2.0}
    summary = pl.DataFrame({"model": ["m1", "m2", "m3"], "benchmark": "qa", "metric": "acc", "value": [0.5, 0.7, 0.4]})

    def drawn(fig) -> tuple[list[tuple[float, float]], str, str]:
        ax = fig.axes[0]
        points = [tuple(p) for c in ax.collections for p in c.get_offsets() if np.isfinite(p).all()]
        texts = " ".join(t.get_text() for t in fig.texts)
        label = ax.get_xlabel()
        plt.close(fig)
        return sorted(points), label, texts

    points, label, texts = drawn(cost_figure(summary, cost, "qa", "acc", "gpu_seconds", ("m1", "m2", "m3")))
    assert points == [(2.0, 0.4), (5.0, 0.5)] and label.startswith("engine seconds the results needed")
    assert "unknown" in texts and "m2" in texts and "m1" not in texts
    old = cost.with_columns(pl.lit(None, pl.Float64).alias("needed_seconds"))  # a run from before: none known
    points, label, texts = drawn(cost_figure(summary, old, "qa", "acc", "gpu_seconds", ("m1", "m2", "m3")))
    assert points == [(9.0, 0.4), (15.0, 0.5), (27.0, 0.7)] and label.startswith("wall seconds of this run")
    assert "unknown" not in texts
