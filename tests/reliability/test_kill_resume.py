"""`kill -9` of an inference job mid-generation loses at most one batch; rerun, it resumes and writes the same bytes."""

import hashlib
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from careval.checkpoint import partial_dir
from careval.datasets import build_benchmark, get_benchmark

pytestmark = pytest.mark.slow

MODEL = "smollm2-135m-instruct"
N_SAMPLES, BATCH = 8, 2  # 4 generation batches of 2 prompts, 16 new tokens each: seconds apiece on 2 cores
# The job computes on one thread: beside another test worker, two threads spun waiting for each other (the
# test took 48 s so, 30 s on one thread, with one other busy process on 2 cores)
N_BATCHES = N_SAMPLES // BATCH
JOB = f"""
import sys
from pathlib import Path

from careval.config import load_config
from careval.datasets import get_benchmark
from careval.inference import run_inference, sampling_for
from careval.models.spec import model_spec

repo, samples, out = map(Path, sys.argv[1:4])
config = load_config(repo / "config" / "config.yaml")
spec = model_spec("{MODEL}", config["models"]["{MODEL}"], models_dir=repo / config["models_dir"]).for_job(threads=1)
benchmark = get_benchmark("demo_open_qa")
run_inference(samples, benchmark, spec, sampling_for(benchmark, {{**config["generation"], "max_new_tokens": 16}}),
              out / "loglik.parquet", out / "generations.parquet", checkpoint_every={BATCH})
"""


def _start(repo_root, tmp_path, samples, out, log):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(
        [sys.executable, "-u", str(script), str(repo_root), str(samples), str(out)],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        env=env,
    )


def _run(repo_root, tmp_path, samples, out, log):
    process = _start(repo_root, tmp_path, samples, out, log)
    assert process.wait(timeout=600) == 0, log.read_text()[-2000:]
    return log.read_text()


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_kill_9_mid_generation_resumes_and_writes_the_same_bytes(tmp_path, repo_root, demo_model_dirs):
    samples = tmp_path / "demo_open_qa.parquet"
    build_benchmark(get_benchmark("demo_open_qa"), samples, limit=N_SAMPLES, root=repo_root)
    reference, resumed = tmp_path / "reference", tmp_path / "resumed"
    _run(repo_root, tmp_path, samples, reference, tmp_path / "reference.log")

    # the job is killed by its PID once its first generation batch is checkpointed, mid-way through the next
    parts = partial_dir(resumed / "generations.parquet")
    process = _start(repo_root, tmp_path, samples, resumed, tmp_path / "killed.log")
    deadline = time.monotonic() + 600
    while not (parts / "part-00000.parquet").exists():
        assert process.poll() is None, "the job ended before its first generation batch was checkpointed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    killed_log = (tmp_path / "killed.log").read_text()
    saved = len(list(parts.glob("part-*.parquet")))
    started = len(re.findall(rf"^demo_open_qa generations: batch \d+/{N_BATCHES} started$", killed_log, re.M))
    assert 1 <= saved < N_BATCHES and not (resumed / "generations.parquet").exists()

    log = _run(repo_root, tmp_path, samples, resumed, tmp_path / "resumed.log")
    counts = re.search(
        rf"^demo_open_qa generations: {N_BATCHES} batches, (\d+) from the checkpoint, (\d+) computed$", log, re.M
    )
    assert counts, log
    from_checkpoint, computed = map(int, counts.groups())
    recomputed = started - from_checkpoint  # begun before the kill, computed again after it
    print(
        f"kill-resume: {saved} of {N_BATCHES} generation batches checkpointed at the kill, {started} begun; "
        f"resumed {from_checkpoint}, computed {computed}, recomputed {recomputed}"
    )
    assert from_checkpoint == saved and computed == N_BATCHES - saved
    assert recomputed <= 1
    # the log-likelihoods had finished before the kill: nothing of them is computed again
    assert re.search(r"^demo_open_qa log-likelihoods: (\d+) batches, \1 from the checkpoint, 0 computed$", log, re.M)
    assert log.count(f"loaded model {MODEL}") == 1
    for name in ("loglik.parquet", "generations.parquet"):
        assert _sha(resumed / name) == _sha(reference / name), name
    assert not parts.exists() and not partial_dir(resumed / "loglik.parquet").exists()
