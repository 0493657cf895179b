"""`kill -9` of an inference job mid-generation loses at most one batch: rerun, it reads what it finished from the
request cache, computes the rest, and writes the same bytes as an uninterrupted run."""

import hashlib
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from careval.datasets import build_benchmark, get_benchmark

pytestmark = pytest.mark.slow

MODEL = "smollm2-135m-instruct"
N_SAMPLES, BATCH = 8, 2  # 4 generation batches of 2 prompts, 16 new tokens each: seconds apiece on 2 cores
# The job computes on one thread: beside another test worker, two threads spun waiting for each other (the
# test took 48 s so, 30 s on one thread, with one other busy process on 2 cores)
N_BATCHES = N_SAMPLES // BATCH
# per sample: the reference alone (rolling) and given the question (demo_open_qa: careval.tasks.open)
LOGLIK_REQUESTS = 2 * N_SAMPLES
JOB = f"""
import sys
from pathlib import Path

from careval.config import load_config
from careval.datasets import get_benchmark
from careval.inference import run_inference, sampling_for
from careval.models.spec import model_spec

repo, samples, out, cache = map(Path, sys.argv[1:5])
config = load_config(repo / "config" / "config.yaml")
entry = config["models"]["{MODEL}"]
spec = model_spec("{MODEL}", entry, models_dir=repo / config["models_dir"], resources={{"cache_dir": str(cache)}})
benchmark = get_benchmark("demo_open_qa")
run_inference(samples, benchmark, spec.for_job(threads=1),
              sampling_for(benchmark, {{**config["generation"], "max_new_tokens": 16}}),
              out / "loglik.parquet", out / "generations.parquet", request_batch={BATCH})
"""


def _start(repo_root, tmp_path, samples, out, cache, log):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src"), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(
        [sys.executable, "-u", str(script), str(repo_root), str(samples), str(out), str(cache)],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        env=env,
    )


def _run(repo_root, tmp_path, samples, out, cache, log):
    process = _start(repo_root, tmp_path, samples, out, cache, log)
    assert process.wait(timeout=600) == 0, log.read_text()[-2000:]
    return log.read_text()


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_kill_9_mid_generation_resumes_from_the_cache_and_writes_the_same_bytes(tmp_path, repo_root, demo_model_dirs):
    samples = tmp_path / "demo_open_qa.parquet"
    build_benchmark(get_benchmark("demo_open_qa"), samples, limit=N_SAMPLES, root=repo_root)
    reference, resumed = tmp_path / "reference", tmp_path / "resumed"
    _run(repo_root, tmp_path, samples, reference, tmp_path / "reference-cache", tmp_path / "reference.log")

    # the job is killed by its PID once its first generation batch is in the cache, mid-way through the next
    log_path, cache = tmp_path / "killed.log", tmp_path / "cache"
    process = _start(repo_root, tmp_path, samples, resumed, cache, log_path)
    deadline = time.monotonic() + 600
    while not re.search(rf"^demo_open_qa generations: batch 1/{N_BATCHES}", log_path.read_text(), re.M):
        assert process.poll() is None, "the job ended before its first generation batch was cached"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    saved = len(re.findall(rf"^demo_open_qa generations: batch \d+/{N_BATCHES}", log_path.read_text(), re.M))
    assert 1 <= saved < N_BATCHES and not (resumed / "generations.parquet").exists()

    log = _run(repo_root, tmp_path, samples, resumed, cache, tmp_path / "resumed.log")
    counts = re.search(r"^cache: (\d+) requests from the cache, (\d+) computed$", log, re.M)
    assert counts, log
    cached, computed = map(int, counts.groups())
    print(
        f"kill-resume: {saved} of {N_BATCHES} generation batches cached at the kill; then {cached} read, {computed} computed"
    )
    # the log-likelihoods and the finished batches are read; only the batches after them are computed: the one the
    # kill interrupted is the only work lost
    assert cached == LOGLIK_REQUESTS + BATCH * saved and computed == BATCH * (N_BATCHES - saved)
    assert log.count(f"loaded model {MODEL}") == 1
    for name in ("loglik.parquet", "generations.parquet"):
        assert _sha(resumed / name) == _sha(reference / name), name
