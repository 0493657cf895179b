"""The warm worker (careval.warm) for real: a worker process, and scripts run as Snakemake runs them
(run_script.py) that hand their job to it. What a job sees in the fork (streams, directory, environment,
status, threads, the preloaded model) is checked against the same script run in its own process."""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from careval.warm import SOCKET_ENV, server as warm_server
from support.threads import torch_threads

RUNNER = Path(__file__).with_name("run_script.py")

# The job: report where it ran, then do what its params say.
REPORT = """\
from careval.warm import offload

offload(snakemake, __file__)

import json
import os
import sys
import time

facts = {"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "value": os.environ.get("CAREVAL_TEST_VALUE")}
if snakemake.params.torch:
    import torch

    facts["torch_threads"] = torch.get_num_threads()
print(json.dumps(facts), flush=True)
print("a line on stderr", file=sys.stderr)
action = snakemake.params.action
if action == "sleep":
    import subprocess

    child = subprocess.Popen(["sleep", "120"])
    open(snakemake.params.pid_file, "w").write(f"{os.getpid()} {child.pid}")
    time.sleep(120)
elif action == "raise":
    raise ValueError("a bad sample")
elif action == "message":
    sys.exit("stopped with a message")
elif action == "kill":
    os.kill(os.getpid(), 9)
elif action == "exit-at-once":  # no interpreter exit, so no reply of the job's own: the worker's reply counts
    os._exit(5)
elif action == "nap":
    time.sleep(1.5)
sys.exit(snakemake.params.code)
"""


@pytest.fixture
def worker(tmp_path, monkeypatch):
    """A worker that imports nothing ahead (a test job needs no warm-up), stopped after the test."""
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    log = tmp_path / "worker.log"
    process = warm_server.start(log, 8000, modules=())
    socket_path = os.environ[SOCKET_ENV]
    monkeypatch.delenv(SOCKET_ENV)
    yield process, socket_path, log
    warm_server.stop(process)


def _script(tmp_path: Path, text: str = REPORT) -> Path:
    script = tmp_path / "job.py"
    script.write_text(text)
    return script


def _run(
    script: Path, params: dict, socket_path: str | None, cwd: Path, *extra: str, env: dict | None = None, **job
) -> subprocess.CompletedProcess:
    env = {**os.environ, "CAREVAL_TEST_VALUE": "from the script's environment", **(env or {})}
    env.pop(SOCKET_ENV, None)
    if socket_path:
        env[SOCKET_ENV] = socket_path
    job = {"params": {"torch": False, "action": None, "code": 0, **params}, **job}
    command = [sys.executable, str(RUNNER), str(script), json.dumps(job), *extra]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _facts(result: subprocess.CompletedProcess) -> dict:
    return json.loads(result.stdout.splitlines()[0])


def test_a_job_runs_in_a_fork_of_the_worker_with_the_scripts_streams_directory_and_environment(worker, tmp_path):
    process, socket_path, log = worker
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = _run(_script(tmp_path), {"code": 3}, socket_path, cwd, rule="infer_open", wildcards={"model": "m"})
    facts = _facts(result)
    assert result.returncode == 3
    assert facts["ppid"] == process.pid  # forked by the worker, not run by the script's interpreter
    assert facts["cwd"] == str(cwd)
    assert facts["value"] == "from the script's environment"
    assert "a line on stderr" in result.stderr
    text = _logged(log, "infer_open[model=m]: ended with status 3")
    assert "infer_open[model=m]: started" in text and "went away" not in text


@pytest.mark.parametrize(
    "action, status, on_stderr",
    [
        (None, 0, ""),
        ("raise", 1, "ValueError: a bad sample"),  # the traceback, as the interpreter prints it
        ("message", 1, "stopped with a message"),
        ("kill", 128 + 9, "killed by signal 9"),
        ("exit-at-once", 5, ""),
    ],
)
def test_the_script_exits_with_the_jobs_status_as_if_it_had_run_the_job(worker, tmp_path, action, status, on_stderr):
    _, socket_path, _ = worker
    warm = _run(_script(tmp_path), {"action": action}, socket_path, tmp_path)
    assert warm.returncode == status
    assert on_stderr in warm.stderr
    if action not in ("kill", "exit-at-once"):  # the same script in its own process: the same status and message
        cold = _run(_script(tmp_path), {"action": action}, None, tmp_path)
        assert cold.returncode == status and on_stderr in cold.stderr


def test_a_job_that_ends_while_the_worker_is_busy_ends_its_script_at_once(worker, tmp_path):
    """The worker may be loading a model for seconds: the job replies to its script itself."""
    process, socket_path, _ = worker
    env = {**os.environ, SOCKET_ENV: socket_path}
    job = json.dumps({"params": {"torch": False, "action": "nap", "code": 4}})
    command = [sys.executable, str(RUNNER), str(_script(tmp_path)), job]
    script = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    assert json.loads(script.stdout.readline())["ppid"] == process.pid  # the job runs (and naps 1.5 s)
    process.send_signal(signal.SIGSTOP)
    try:
        assert script.wait(timeout=30) == 4
    finally:
        process.send_signal(signal.SIGCONT)


def test_without_a_worker_the_script_runs_the_job_itself(tmp_path):
    script = _script(tmp_path)
    for socket_path in (None, str(tmp_path / "no-such-socket")):
        result = _run(script, {"code": 2}, socket_path, tmp_path)
        assert result.returncode == 2
        assert _facts(result)["ppid"] == os.getpid()  # the runner's own process ran it


@pytest.mark.parametrize("job", ["--unreadable", "--unpicklable"])
def test_a_job_the_worker_cannot_take_is_run_by_the_script(worker, tmp_path, job):
    _, socket_path, log = worker
    result = _run(_script(tmp_path), {"code": 0}, socket_path, tmp_path, job)
    assert result.returncode == 0
    assert _facts(result)["ppid"] == os.getpid()
    assert ("request refused" in log.read_text()) == (job == "--unreadable")


def _eventually(check, timeout: float = 30, what: str = "") -> None:
    """Wait until `check()` holds (the worker reaps jobs and logs asynchronously, after the script ended)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _written(path: Path) -> str:
    _eventually(lambda: path.exists() and path.read_text(), what=f"{path} never written")
    return path.read_text()


def _logged(log: Path, line: str) -> str:
    _eventually(lambda: line in log.read_text(), what=f"not in the worker's log: {line}")
    return log.read_text()


def _gone(pid: int) -> bool:
    def ended() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    _eventually(ended, timeout=15, what=f"process {pid} still runs")
    return True


def _start_sleeping_job(tmp_path: Path, socket_path: str) -> tuple[subprocess.Popen, int, int]:
    pid_file = tmp_path / "pids"
    env = {**os.environ, SOCKET_ENV: socket_path}
    job = {"params": {"torch": False, "action": "sleep", "code": 0, "pid_file": str(pid_file)}}
    script = subprocess.Popen(
        [sys.executable, str(RUNNER), str(_script(tmp_path)), json.dumps(job)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    job_pid, child_pid = map(int, _written(pid_file).split())
    return script, job_pid, child_pid


def test_a_cancelled_script_stops_its_job_and_what_the_job_started(worker, tmp_path):
    _, socket_path, log = worker
    script, job_pid, child_pid = _start_sleeping_job(tmp_path, socket_path)
    script.send_signal(signal.SIGKILL)  # as Snakemake cancels a job
    script.wait()
    assert _gone(job_pid) and _gone(child_pid)
    _logged(log, "its script went away; stopping the job")


def test_the_worker_ending_fails_the_running_job_and_ends_it(worker, tmp_path):
    process, socket_path, _ = worker
    script, job_pid, _child = _start_sleeping_job(tmp_path, socket_path)
    process.kill()
    process.wait()
    assert script.wait(timeout=30) == 1
    assert "ended before this job did" in script.stderr.read()
    assert _gone(job_pid)


def test_the_worker_ends_with_the_process_that_started_it(tmp_path):
    log = tmp_path / "worker.log"
    starter = (
        "import os, sys\n"
        "from careval.warm import server\n"
        f"p = server.start({str(log)!r}, 8000, modules=())\n"
        "print(p.pid, os.environ[server.SOCKET_ENV])\n"
    )
    out = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, timeout=60, check=True)
    pid, socket_path = out.stdout.split()
    assert _gone(int(pid))  # its parent exited without stopping it
    assert not Path(socket_path).parent.exists()
    assert "stopped" in log.read_text()


def test_stop_ends_the_worker_and_removes_its_socket(tmp_path, monkeypatch):
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    process = warm_server.start(tmp_path / "worker.log", 8000, modules=())
    socket_path = Path(os.environ[SOCKET_ENV])
    assert socket_path.exists() and oct(socket_path.parent.stat().st_mode & 0o777) == "0o700"
    warm_server.stop(process)
    assert process.returncode == 0
    assert SOCKET_ENV not in os.environ and not socket_path.parent.exists()


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(_cuda(), reason="on a GPU machine the worker loads no model (the GPU test below)")
def test_a_job_runs_the_model_the_worker_loaded_with_the_threads_snakemake_gave_it(
    tiny_llama_dir, tmp_path, monkeypatch
):
    from careval.backends import load_backend
    from careval.models.spec import model_spec

    monkeypatch.delenv(SOCKET_ENV, raising=False)
    log = tmp_path / "worker.log"
    process = warm_server.start(log, 8000, modules=("torch", "careval.backends.hf.backend"))
    socket_path = os.environ.pop(SOCKET_ENV)
    try:
        loads = {
            "name": "tiny",
            "entry": {"source": f"local:{tiny_llama_dir}", "dtype": "float32"},
            "models_dir": str(tmp_path),
        }
        pairs = [["The patient presented with", " chest pain"], ["Aspirin is", " contraindicated"]]
        job = """\
from careval.warm import offload

offload(snakemake, __file__)

import json
import os
import sys

import torch

from careval.backends import load_backend
from careval.backends.hf import loading
from careval.canonical import job_of

backend = load_backend(job_of(snakemake).judge.for_job(snakemake.threads, 0))
preloaded = [model for _tokenizer, model in loading._PRELOADED.values()]
print(json.dumps({
    "ppid": os.getppid(),
    "preloaded": any(backend.model is model for model in preloaded),
    "threads": torch.get_num_threads(),
    "logliks": backend.loglikelihood([tuple(p) for p in snakemake.params.pairs]),
}))
"""
        threads = {"OMP_NUM_THREADS": "2"}  # what Snakemake exports for a job of 2 threads
        result = _run(
            _script(tmp_path, job), {"loads": loads, "pairs": pairs}, socket_path, tmp_path, env=threads, threads=2
        )
    finally:
        warm_server.stop(process)
    assert result.returncode == 0, result.stderr
    facts = _facts(result)
    assert facts["ppid"] == process.pid and facts["preloaded"]
    assert facts["threads"] == 2
    assert "model tiny" in log.read_text() and "ready in" in log.read_text()
    # the same numbers as the model loaded in this process on the job's 2 threads: the same summation order (on 1
    # thread an AVX2-only machine's float32 sums came out one float32 step apart, 1.9e-6 at -27.66)
    with torch_threads():
        want = load_backend(model_spec(**loads).for_job(threads=2)).loglikelihood([tuple(p) for p in pairs])
    assert facts["logliks"] == pytest.approx(want, abs=1e-6)


@pytest.mark.slow
def test_the_warmed_up_worker_has_one_thread_to_fork(tmp_path, monkeypatch):
    """A fork keeps only the thread that forks: no module the worker imports ahead may start one."""
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    log = tmp_path / "worker.log"
    process = warm_server.start(log, 8000)
    try:
        deadline = time.monotonic() + 300
        while "warmed up" not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        warm_server.stop(process)
    text = log.read_text()
    assert "not imported ahead" not in text, text
    assert "; 1 thread(s): " in text, text


GPU_JOB = """\
from careval.warm import offload

offload(snakemake, __file__)

import json
import os

import torch

from careval.backends.hf.backend import HFBackend

initialized_at_start = torch.cuda.is_initialized()  # what the worker left: it must not have touched CUDA
backend = HFBackend.load("tiny", **snakemake.params.spec)
print(json.dumps({
    "ppid": os.getppid(),
    "cuda_initialized_at_start": initialized_at_start,
    "device": str(backend.device),
    "dtype": str(backend.model.dtype),
    "logliks": backend.loglikelihood([tuple(p) for p in snakemake.params.pairs]),
}))
"""


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_on_a_gpu_machine_the_worker_loads_no_model_and_its_jobs_run_on_the_gpu(tiny_llama_dir, tmp_path, monkeypatch):
    """A fork cannot use a CUDA context its parent made: the worker looks for GPU device files, never asks CUDA,
    and the jobs it forks put their own model on the GPU, in bfloat16 where the GPU computes it (bfloat16_if_native)."""
    from careval.backends.hf.backend import HFBackend

    monkeypatch.delenv(SOCKET_ENV, raising=False)
    log = tmp_path / "worker.log"
    process = warm_server.start(log, 8000, modules=("torch", "transformers", "careval.backends.hf.backend"))
    socket_path = os.environ.pop(SOCKET_ENV)
    spec = {"path": str(tiny_llama_dir), "dtype": "bfloat16_if_native", "batch_size": 2}
    pairs = [["The patient presented with", " chest pain"], ["Aspirin is", " contraindicated"]]
    try:
        result = _run(_script(tmp_path, GPU_JOB), {"spec": spec, "pairs": pairs}, socket_path, tmp_path, gpu=1)
    finally:
        warm_server.stop(process)
    assert result.returncode == 0, result.stderr
    facts = _facts(result)
    assert facts["ppid"] == process.pid and not facts["cuda_initialized_at_start"]
    assert facts["device"].startswith("cuda") and facts["dtype"] == "torch.bfloat16"
    text = log.read_text()
    assert "a GPU is visible" in text and "warning" not in text and "multi-threaded" not in text  # no CUDA thread
    cold = HFBackend.load("tiny", **spec).loglikelihood([tuple(p) for p in pairs])
    assert facts["logliks"] == pytest.approx(cold, abs=1e-3)


def _job_naming(folder: Path, dtype: str, tmp_path: Path) -> SimpleNamespace:
    from careval.canonical import JobParam
    from careval.models.spec import model_spec
    from careval.specs import JudgeJob

    spec = model_spec(folder.name, {"source": f"local:{folder}", "dtype": dtype}, models_dir=tmp_path)
    return SimpleNamespace(
        params=SimpleNamespace(job=JobParam(JudgeJob(judge=spec, options={}, request_batch=8))),
        input=SimpleNamespace(),
        threads=1,
        resources=SimpleNamespace(gpu=0),
    )


def test_weights_bytes_is_the_memory_the_loaded_model_takes(tiny_llama_dir):
    import torch

    from careval.backends.hf.loading import load_pretrained
    from careval.warm.preload import weights_bytes

    for dtype in ("float32", "bfloat16"):
        _tokenizer, model = load_pretrained(str(tiny_llama_dir), dtype)
        loaded = sum(t.numel() * t.element_size() for t in model.parameters())
        assert weights_bytes(str(tiny_llama_dir), dtype) == loaded, dtype
        assert model.dtype == getattr(torch, dtype)


def test_the_shelf_keeps_the_models_that_fit_its_budget_dropping_the_least_recently_used(
    tiny_llama_dir, tmp_path, monkeypatch
):
    import shutil

    from careval.backends.hf import loading as hf
    from careval.warm.preload import ModelShelf, weights_bytes

    monkeypatch.setattr(hf, "_PRELOADED", {})
    folders = [tmp_path / name for name in ("a", "b")]
    for folder in folders:
        shutil.copytree(tiny_llama_dir, folder)
    shelf = ModelShelf(weights_bytes(str(folders[0]), "float32") * 3 // 2)  # room for one of them
    kept = lambda: sorted(Path(key[0]).name for key in hf._PRELOADED)  # noqa: E731

    assert "ready" in shelf.load_for(_job_naming(folders[0], "float32", tmp_path))
    assert kept() == ["a"]
    assert "ready" in shelf.load_for(_job_naming(folders[1], "float32", tmp_path))
    assert kept() == ["b"]  # a was dropped to make room
    shelf.load_for(_job_naming(folders[1], "float32", tmp_path))
    assert kept() == ["b"]  # kept, not loaded twice
    assert "not kept" in ModelShelf(0).load_for(_job_naming(folders[0], "float32", tmp_path))
    assert kept() == ["b"]
    assert (
        shelf.load_for(SimpleNamespace(params=SimpleNamespace(), threads=1, resources=SimpleNamespace(gpu=0))) is None
    )


def test_the_shelf_returns_once_the_loading_pool_s_threads_have_ended(tiny_llama_dir, tmp_path, monkeypatch):
    """transformers ends its weight-loading pool without waiting for its threads; a job forked while one is still
    ending would copy it (the CI log of e8b55c2: "warning: 3 thread(s) ... before forking jobs")."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from careval.backends.hf import loading as hf
    from careval.warm.preload import ModelShelf

    monkeypatch.setattr(hf, "_PRELOADED", {})
    loaded = hf.preload

    def preload_as_transformers_does(folder, dtype):
        pool = ThreadPoolExecutor(max_workers=2)
        for _ in range(2):
            pool.submit(time.sleep, 0.5)
        pool.shutdown(wait=False)  # as transformers' core_model_loading does
        loaded(folder, dtype)

    monkeypatch.setattr(hf, "preload", preload_as_transformers_does)
    assert "ready" in ModelShelf(2**40).load_for(_job_naming(tiny_llama_dir, "float32", tmp_path))
    assert [t.name for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")] == []


REPO = Path(__file__).resolve().parents[2]
JOB_SCRIPT = REPO / "workflow" / "scripts" / "job.py"


def _rule_scripts_and_bodies() -> tuple[list[str], list[str]]:
    """Every `script:` of the workflow's rule files, and every `body` param, as written there."""
    text = "\n".join(path.read_text() for path in sorted((REPO / "workflow" / "rules").glob("*.smk")))
    scripts = re.findall(r"^\s*script:\s*\n\s*\"([^\"]+)\"", text, re.MULTILINE)
    return scripts, re.findall(r"^\s*body=\"([^\"]+)\",", text, re.MULTILINE)


def test_every_rule_runs_the_one_script_which_names_its_body():
    """One script, workflow/scripts/job.py, for every rule (the worker is called there, careval.jobs.run); each
    rule's `body` is a function of careval.jobs.bodies, and every public function there is some rule's body (a
    helper bodies share is private: `_step_model`)."""
    import inspect

    from careval.jobs import bodies
    from careval.jobs.run import job_body

    scripts, named = _rule_scripts_and_bodies()
    assert scripts and set(scripts) == {"../scripts/job.py"}
    assert len(named) == len(scripts)  # one body per rule (a `use rule` copy keeps its rule's)
    assert sorted(path.name for path in JOB_SCRIPT.parent.iterdir() if path.suffix == ".py") == ["job.py"]
    defined = set()
    for module in (REPO / "src" / "careval" / "jobs" / "bodies").glob("[!_]*.py"):
        found = __import__(f"{bodies.__name__}.{module.stem}", fromlist=["_"])
        defined |= {
            f"{module.stem}.{name}"
            for name, f in inspect.getmembers(found, inspect.isfunction)
            if f.__module__ == found.__name__ and not name.startswith("_")
        }
    assert all(callable(job_body(name)) for name in named)
    assert set(named) == defined


def test_the_job_script_imports_nothing_but_the_standard_library_before_the_worker_takes_the_job():
    """What a job's process imports before offload is imported in every job, worker or not: careval.jobs.run and
    the worker's client (standard library only), not polars or the body's modules."""
    code = "import sys, runpy; import careval.jobs.run; print(sorted(m for m in sys.modules if m.startswith(('careval', 'polars', 'torch'))))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ast.literal_eval(result.stdout) == [
        "careval",
        "careval.jobs",
        "careval.jobs.run",
        "careval.warm",
        "careval.warm.client",
    ]


def _consistency_job(tmp_path: Path) -> tuple[dict, Path, Path]:
    """A real job of rule consistency (body summary.consistency) over one model's repeat scores, and its output."""
    import polars as pl

    from careval.schemas import REPEAT_SCORE_SCHEMA

    scores = tmp_path / "consistency_scores" / "m" / "b.parquet"
    scores.parent.mkdir(parents=True)
    rows = [("s1", 0, "rouge1", 0.2), ("s1", 1, "rouge1", 0.6), ("s2", 0, "rouge1", 0.5), ("s2", 1, "rouge1", 0.5)]
    pl.DataFrame(
        [dict(zip(("id", "repeat", "metric", "value", "status"), (*row, "ok"))) for row in rows],
        schema=REPEAT_SCORE_SCHEMA,
    ).write_parquet(scores)
    output, log = tmp_path / "out" / "consistency.parquet", tmp_path / "logs" / "consistency.log"
    job = {"input": [str(scores)], "output": [str(output)], "log": [str(log)], "rule": "consistency"}
    return job, output, log


def test_the_job_script_runs_its_rules_body_in_the_worker_and_without_one(worker, tmp_path):
    """workflow/scripts/job.py with a real body: in the worker's fork where there is one, in its own process where
    not, the same table either way (the body's function called here), and the job's log written."""
    import polars as pl
    from polars.testing import assert_frame_equal

    from careval.analysis.statistics.consistency import consistency_table

    _, socket_path, worker_log = worker
    for where, socket in (("warm", socket_path), ("cold", None)):
        job, output, log = _consistency_job(tmp_path / where)
        env = {**os.environ, "OMP_NUM_THREADS": "0"}  # a served job's: OpenMP takes 1 (careval.jobs.run)
        command = [
            sys.executable,
            str(RUNNER),
            str(JOB_SCRIPT),
            json.dumps({**job, "params": {"body": "summary.consistency"}}),
        ]
        env.pop(SOCKET_ENV, None)
        if socket:
            env[SOCKET_ENV] = socket
        result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        expected = consistency_table([("m", "b", Path(job["input"][0]))])
        assert_frame_equal(pl.read_parquet(output), expected)
        assert log.exists()
    text = worker_log.read_text()
    assert text.count("consistency[]: started") == 1 and "consistency[]: ended with status 0" in text


def test_a_body_that_is_not_one_is_named():
    from careval.jobs.run import job_body

    with pytest.raises(ValueError, match=re.escape("'<module>.<function>' of careval.jobs.bodies")):
        job_body("consistency")
    with pytest.raises(AttributeError):
        job_body("summary.no_such_job")


def test_the_worker_imports_what_the_runs_jobs_need():
    """From the specs of the jobs a run will run: the LLM libraries where one loads a model, each scoring job's
    families' libraries (the registry's `imports`), the analysis libraries where one tests or draws, nothing else."""
    from careval.metrics.registry import FAMILIES
    from careval.plan import load_plan
    from careval.warm.preload import ANALYSIS_MODULES, LLM_MODULES, warm_modules

    plan = load_plan(Path(__file__).resolve().parents[2] / "config" / "config.yaml")
    assert warm_modules([plan.normalise_job("demo_mcqa")]) == ()  # reading the data needs none of them
    assert warm_modules([plan.infer_job("gemma3-270m", "demo_mcqa")]) == LLM_MODULES
    rouge = warm_modules([plan.score_job("demo_open_qa", ["rouge", "perplexity"])])
    assert rouge == FAMILIES["rouge"].imports and "bert_score" not in rouge
    report = warm_modules([plan.score_job("demo_open_qa", ["bertscore"]), plan.aggregate_job()])
    assert report == FAMILIES["bertscore"].imports + ANALYSIS_MODULES
    everything = warm_modules()  # a worker started outside a run: every job's
    assert set(LLM_MODULES + ANALYSIS_MODULES + FAMILIES["moverscore"].imports) <= set(everything)
    assert len(set(everything)) == len(everything)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="the kernel's thread list is Linux's")
def test_a_shut_down_pools_threads_are_gone_from_the_kernel_when_joined():
    """The worker forks a job right after loading a model, and warns of any thread a fork would lose: transformers
    ends its loading pool with shutdown(wait=False), and Thread.join returns a moment before the kernel ends the
    thread (CI saw the warning once: "2 thread(s)"). Over 1,500 pools (without the wait for the kernel, some are still
    listed: 30 of 2,000 here, 500 of 2,000 on a busy machine) none is listed once join_pool_threads returns."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from careval.warm.preload import join_pool_threads

    listed = 0
    for _ in range(1500):
        pool = ThreadPoolExecutor(max_workers=4)
        list(pool.map(abs, range(-8, 0)))
        ids = {str(t.native_id) for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")}
        pool.shutdown(wait=False)
        join_pool_threads()
        listed += bool(ids & set(os.listdir("/proc/self/task")))
    assert listed == 0
