"""Cost per result: sums of the jobs' logged times (Snakemake benchmark files) and of the tokens of their outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from careval.analysis.cost import CostError, CostJob, efficiency_frontier, token_counts, write_cost

MODELS_DIR = Path(__file__).resolve().parents[2] / "resources" / "models"


def benchmark_file(path: Path, seconds: list[float]) -> None:
    """A Snakemake benchmark file as Snakemake writes it (one row per repeat)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    rows = "".join(f"{s}\t0:00:01\t67.89\t485.20\t41.15\t47.27\t0.00\t0.00\t0.00\t0.35\n" for s in seconds)
    path.write_text(header + rows)


def job(models=("m1", "m2"), benchmarks=("qa", "mcqa"), gpus=None, paths=None) -> CostJob:
    gpus = gpus or {"infer_open": {"m1": 2, "m2": 1}, "infer_closed": {"m1": 2, "m2": 1}, "judge": {"m1": 4, "m2": 4}}
    gpus["judge_repeats"] = gpus["judge"]
    return CostJob(models=models, benchmarks=benchmarks, gpus=gpus, model_paths=paths or {})


def test_times_and_gpu_seconds_sum_the_jobs_logged_times(tmp_path):
    root = tmp_path / "benchmarks"
    benchmark_file(root / "infer_open/m1/qa.tsv", [10.5])
    benchmark_file(root / "judge/m1/qa.tsv", [3.0, 4.0])  # benchmark: repeat(..., 2)
    benchmark_file(root / "judge_repeats/consistency/m1/qa.tsv", [1.25])
    benchmark_file(root / "infer_closed/m2/mcqa.tsv", [7.0])
    benchmark_file(root / "infer_closed/other/mcqa.tsv", [99.0])  # a model not in the run
    table = write_cost(root, {}, job(), tmp_path / "cost.parquet")
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
        write_cost(tmp_path / "benchmarks", {}, job(), tmp_path / "cost.parquet")


def test_tokens_sum_the_model_tokenizer_over_prompts_requests_and_outputs(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = MODELS_DIR / "smollm2-135m-instruct"
    if not folder.exists():
        pytest.skip("the demo models are not prepared")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    generations = pl.DataFrame(
        {"id": ["1", "2"], "prompt": ["What is a fever?", "Name a bone."], "output": ["A high body heat.", "Femur"]}
    ).with_columns(status=pl.lit("ok"))
    logliks = pl.DataFrame(
        {
            "id": ["1"],
            "kind": ["option"],
            "option": [0],
            "context": ["Q: a?"],
            "continuation": [" yes"],
            "loglik": [-1.0],
        }
    )
    generations.write_parquet(tmp_path / "g.parquet")
    logliks.write_parquet(tmp_path / "l.parquet")
    # by hand: one encode per text
    prompt = sum(len(tokenizer.encode(t, add_special_tokens=False)) for t in ["What is a fever?", "Name a bone."])
    prompt += len(tokenizer.encode("Q: a? yes", add_special_tokens=False))
    generated = sum(len(tokenizer.encode(t, add_special_tokens=False)) for t in ["A high body heat.", "Femur"])
    spec = job(models=("m1",), benchmarks=("qa",), paths={"m1": str(folder)})
    table = write_cost(
        tmp_path / "none",
        {("m1", "qa"): (tmp_path / "g.parquet", tmp_path / "l.parquet")},
        spec,
        tmp_path / "c.parquet",
    )
    assert table.select("prompt_tokens", "generated_tokens").row(0) == (prompt, generated)
    assert token_counts(lambda texts: len(texts), None, logliks) == (1, 0)


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
