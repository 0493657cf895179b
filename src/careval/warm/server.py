"""The warm worker's process: import once, then fork one child per job that a script hands over (client.py).

One process per local Snakemake run (`start` from the Snakefile's onstart, `stop` from onsuccess/onerror).
It never runs a job itself: it imports the modules the run's jobs need (preload.warm_modules), loads each job's hf model before forking it
(preload.py), and waits. A fork must not inherit threads, locks or a CUDA context, so the worker keeps to
one thread: it runs with every thread-pool variable at 1, computes nothing with torch or polars, and on a
machine with a GPU loads no models at all (the jobs then load theirs on the GPU, as without a worker).

A job's child takes the job's standard streams (passed over the socket), working directory, environment,
sys.path and torch thread count, runs the script with runpy in its own process group, and exits with the
script's status, which the worker sends back to the waiting script. If that script goes away (Snakemake
cancelled the job), the worker stops the child's process group (SIGTERM, then SIGKILL). The worker exits
when its parent, the Snakemake process, does, whatever way it ends.
"""

from __future__ import annotations

import argparse
import atexit
import os
import pickle
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import client
from .client import DONE, HEADER, RAN, REFUSED, REPLY, SOCKET_ENV, STARTED

# Thread pools of one thread in the worker, none started before a fork. torch's follows each job's threads
# (run_job); numpy's BLAS pool is sized when numpy is imported, so a forked job keeps 1 BLAS thread.
SINGLE_THREADED = {
    **dict.fromkeys(
        ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"),
        "1",
    ),
    "JE_ARROW_MALLOC_CONF": "background_thread:false",  # pyarrow's allocator (preload.py)
}
STOP_GRACE_S = 5.0  # between SIGTERM and SIGKILL, for a job or for the worker itself
READY_TIMEOUT_S = 120.0


@dataclass
class Job:
    conn: socket.socket
    name: str
    started: float = field(default_factory=time.perf_counter)
    listening: bool = True  # its connection is in the selector
    answered: bool = False  # the script has the job's status (it said DONE)
    stop_at: float | None = None  # when its SIGTERM was sent (its script went away)


# ------------------------------------------------------------------ the run's side (the Snakefile)


def start(log_path: str | Path, model_mb: int, modules: tuple[str, ...] | None = None) -> subprocess.Popen:
    """Start the run's warm worker and point this process's future jobs at it (SOCKET_ENV); its output goes
    to `log_path`. It listens at once, imports `modules` (default: every job's, preload.warm_modules) between jobs
    and keeps up to `model_mb` of hf models loaded."""
    folder = tempfile.mkdtemp(prefix="careval-warm-")  # 0700: only this user's jobs reach the socket
    path = os.path.join(folder, "socket")
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "careval.warm.server", "--socket", path, "--parent", str(os.getpid())]
    command += ["--model-mb", str(model_mb)]
    if modules is None:
        from .preload import warm_modules

        modules = warm_modules()
    command += ["--modules", ",".join(modules)]
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not in the terminal's process group: Ctrl-C reaches Snakemake, which cancels the jobs
            env={**os.environ, **SINGLE_THREADED},
        )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            print(f"careval: the warm worker did not start (see {log_path}); every job runs as its own process")
            stop(process)
            return process
        time.sleep(0.02)
    os.environ[SOCKET_ENV] = path
    return process


def stop(process: subprocess.Popen) -> None:
    """End the worker (SIGTERM: it stops its running jobs and removes its socket), then SIGKILL if it must."""
    os.environ.pop(SOCKET_ENV, None)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=2 * STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ------------------------------------------------------------------ the worker


class Worker:
    def __init__(self, path: str, parent: int, modules: tuple[str, ...], model_mb: int) -> None:
        from careval.backends.dtype import gpu_visible

        from .preload import ModelShelf

        self.path = path
        self.parent = parent
        self.modules = modules
        self.shelf = ModelShelf(model_mb * 2**20)
        self.jobs: dict[int, Job] = {}
        self.stopping = False
        # load jobs' hf models before forking them: not on a GPU machine (a fork cannot share CUDA)
        self.models = not gpu_visible()
        self.threads_warned = ""
        # a stop is honoured from the moment the socket appears (start() returns then, and a SIGTERM before serve()
        # would otherwise kill the worker without removing its socket)
        signal.signal(signal.SIGTERM, self._request_stop)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # bound before the imports, so a job that starts meanwhile queues instead of running without the worker
        self.listener.bind(path + ".new")
        self.listener.listen(64)
        os.rename(path + ".new", path)  # the path appears when it accepts (start() waits for it)
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # SIGTERM: handled since __init__
        self.selector.register(self.listener, selectors.EVENT_READ, None)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        # one module at a time, between requests: a job that needs none of them (normalisation) starts at once
        pending, started = list(self.modules), time.perf_counter()
        while not self.stopping and os.getppid() == self.parent:
            events = self.selector.select(timeout=0 if pending else 1.0)
            for key, _ in events:
                if key.fileobj is self.listener:
                    self._accept()
                elif key.fileobj == self.wake_r:
                    _drain(self.wake_r)
                else:
                    self._script_done_or_gone(key.data)
            self._reap()
            if pending and not events:
                self._import(pending.pop(0))
                if not pending:
                    log(f"warmed up in {time.perf_counter() - started:.1f}s; {_threads()}")
                    self._check_threads()
        self._shutdown()

    def _import(self, name: str) -> None:
        from .preload import import_module

        failure = import_module(name)
        if failure:
            log(f"not imported ahead: {failure}")

    def _check_threads(self) -> None:
        """A thread the worker started (by loading something) is missing in every fork: say so, once."""
        threads = _threads()
        if not threads.startswith("1 thread(s)") and threads != self.threads_warned:
            log(f"warning: {threads} before forking jobs; a fork keeps only the first (preload.py)")
            self.threads_warned = threads

    def _request_stop(self, *_: Any) -> None:
        self.stopping = True

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        fds: list[int] = []
        try:
            conn.settimeout(30)  # a script sends its request as it connects
            header, fds, _flags, _addr = socket.recv_fds(conn, HEADER.size, 3)
            if len(header) < HEADER.size or len(fds) != 3:
                raise ConnectionError("incomplete request")
            (size,) = HEADER.unpack(header)
            request = pickle.loads(_receive_exactly(conn, size))
            conn.settimeout(None)
        except Exception as error:  # whatever a request holds, the worker stays up
            log(f"request refused: {type(error).__name__}: {error}")
            for fd in fds:
                os.close(fd)
            try:
                conn.sendall(REPLY.pack(REFUSED, 0))  # nothing of the job ran: its script runs it itself
            except OSError:
                pass
            conn.close()
            return
        name = _job_name(request)
        self._preload(name, request["snakemake"])
        sys.stdout.flush()
        sys.stderr.flush()
        worker = os.getpid()
        pid = os.fork()
        if pid == 0:
            self.selector.close()
            others = [self.listener.fileno(), self.wake_r, self.wake_w]
            others += [job.conn.fileno() for job in self.jobs.values()]
            run_job(request, fds, conn, close=others, worker=worker)  # never returns
        for fd in fds:
            os.close(fd)
        try:
            os.setpgid(pid, pid)  # as the child does: the group exists before anyone signals it
        except OSError:
            pass
        try:
            conn.sendall(REPLY.pack(STARTED, pid))
        except OSError:
            pass  # the script is gone already: the selector sees it at once
        self.jobs[pid] = Job(conn, name)
        self.selector.register(conn, selectors.EVENT_READ, pid)
        log(f"{name}: started (pid {pid})")

    def _preload(self, name: str, job: Any) -> None:
        """The job's hf model, loaded here once for every job that runs it (preload.py)."""
        if not self.models:
            return
        loaded_at = time.perf_counter()
        try:
            done = self.shelf.load_for(job)
        except Exception as error:  # the job meets the same error when it loads the model, in its own log
            log(f"{name}: model not loaded ahead: {type(error).__name__}: {error}")
            return
        if done:
            log(f"{name}: model {done} in {time.perf_counter() - loaded_at:.1f}s")
            self._check_threads()

    def _script_done_or_gone(self, pid: int) -> None:
        """The job's script said DONE (it has the status the job sent) or went away without: Snakemake cancelled
        it, so the job stops too."""
        job = self.jobs[pid]
        try:
            said = job.conn.recv(1)
        except OSError:
            said = b""
        self._unlisten(job)
        if said == DONE:
            job.answered = True
        elif job.stop_at is None:
            log(f"{job.name}: its script went away; stopping the job")
            _signal_group(pid, signal.SIGTERM)
            job.stop_at = time.perf_counter()

    def _unlisten(self, job: Job) -> None:
        if job.listening:
            self.selector.unregister(job.conn)
            job.listening = False

    def _reap(self) -> None:
        while self.jobs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                break
            job = self.jobs.pop(pid, None)
            if job is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            log(f"{job.name}: ended with status {code} after {time.perf_counter() - job.started:.1f}s")
            self._unlisten(job)
            if not job.answered and job.stop_at is None:
                try:  # for a job killed by a signal, or one that never reached its own reply
                    job.conn.sendall(REPLY.pack(RAN, code))
                except OSError:
                    pass
            job.conn.close()
        now = time.perf_counter()
        for pid, job in self.jobs.items():
            if job.stop_at is not None and now - job.stop_at > STOP_GRACE_S:
                _signal_group(pid, signal.SIGKILL)

    def _shutdown(self) -> None:
        # A job sends its status to its script, then exits: the script, then the run, can end in between (the run's
        # last job, on a busy machine), and the job's SIGTERM would log a finished job as ended by a signal. So the
        # scripts' DONE still unread is read first, and only the jobs without an answered script are stopped.
        for pid, job in list(self.jobs.items()):
            if job.listening and select.select([job.conn], [], [], 0)[0]:
                self._script_done_or_gone(pid)
        for pid, job in self.jobs.items():
            if not job.answered and job.stop_at is None:
                _signal_group(pid, signal.SIGTERM)
        deadline = time.perf_counter() + STOP_GRACE_S
        while self.jobs and time.perf_counter() < deadline:
            self._reap()
            time.sleep(0.05)
        for pid in self.jobs:
            _signal_group(pid, signal.SIGKILL)
        self.listener.close()
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)
        log("stopped")


def run_job(request: dict, fds: list[int], conn: socket.socket, close: list[int], worker: int) -> None:
    """In the forked child: become the job's process and run its script; sends the script's status to the
    waiting script itself (at once, even while the worker is busy loading a model) and exits with it."""
    code = 1
    log_fd = os.dup(2)  # the worker's log
    try:
        os.setpgid(0, 0)  # the job and whatever it starts: one group for the worker to stop
        _die_with_parent(worker)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        for fd in close:
            os.close(fd)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        _standard_streams()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # TMPDIR is the job's
        sys.argv = request["argv"]
        sys.path[:] = request["sys_path"]
        _job_threads()
        client.in_worker = True
        before = set(sys.modules)
        import runpy

        try:
            runpy.run_path(request["script"], init_globals={"snakemake": request["snakemake"]}, run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop)
        except BaseException as error:
            sys.excepthook(type(error), error, error.__traceback__)
            code = 1
        atexit._run_exitfuncs()  # as at a normal interpreter exit
        os.write(log_fd, f"{_job_name(request)}: {_imports(before)}\n".encode())
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            conn.sendall(REPLY.pack(RAN, code))
        except Exception:
            pass
        os._exit(code)


def _standard_streams() -> None:
    """sys.stdin/stdout/stderr anew on descriptors 0-2 (now the script's), buffered as the interpreter buffers
    them: stdout by line on a terminal, else in blocks; stderr by line."""
    streams = []
    for fd, mode in ((0, "r"), (1, "w"), (2, "w")):
        line = fd == 2 or (fd == 1 and os.isatty(fd))
        errors = "backslashreplace" if fd == 2 else None
        streams.append(open(fd, mode, buffering=1 if line else -1, errors=errors, closefd=False))  # noqa: SIM115
    sys.stdin = sys.__stdin__ = streams[0]
    sys.stdout = sys.__stdout__ = streams[1]
    sys.stderr = sys.__stderr__ = streams[2]


def _threads() -> str:
    """The worker's threads, by name (Linux): a fork keeps only the one that forked (preload.py)."""
    if not os.path.isdir("/proc/self/task"):
        return "threads unknown"
    names = [Path(f"/proc/self/task/{task}/comm").read_text().strip() for task in os.listdir("/proc/self/task")]
    return f"{len(names)} thread(s): {', '.join(names)}"


def _imports(before: set[str]) -> str:
    """What a job imported itself: packages the worker had not imported, and modules of those it had."""
    added = set(sys.modules) - before
    new = sorted({name.partition(".")[0] for name in added} - before)
    more = Counter(name.partition(".")[0] for name in added if name.partition(".")[0] in before)
    return (
        f"imported by the job itself: {', '.join(new) or 'nothing'}; "
        f"more modules of: {', '.join(f'{top} ({n})' for top, n in sorted(more.items())) or 'none'}"
    )


def _job_threads() -> None:
    """torch's intra-op threads as Snakemake gave the job (its OMP_NUM_THREADS); the worker ran with 1."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if "torch" in sys.modules and threads.isdigit() and int(threads) > 0:
        sys.modules["torch"].set_num_threads(int(threads))


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)  # sys.exit("message"), as the interpreter shows it
    return 1


def _die_with_parent(worker: int) -> None:
    """SIGKILL when the worker dies (Linux): a job must not outlive the worker its script waits on."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != worker:  # it died before the line above took effect
        os._exit(1)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _job_name(request: dict) -> str:
    job = request.get("snakemake")
    wildcards = dict(getattr(job, "wildcards", {}).items()) if job is not None else {}
    return (
        f"{getattr(job, 'rule', Path(request['script']).stem)}[{', '.join(f'{k}={v}' for k, v in wildcards.items())}]"
    )


def _receive_exactly(conn: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError(f"request cut short ({size - left} of {size} bytes)")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--parent", type=int, required=True, help="exit when this process (Snakemake) does")
    parser.add_argument("--modules", required=True, help="comma-separated modules to import ahead (may be empty)")
    parser.add_argument("--model-mb", type=int, required=True, help="the most memory of hf models kept loaded")
    args = parser.parse_args(argv)
    modules = tuple(name for name in args.modules.split(",") if name)
    worker = Worker(args.socket, args.parent, modules, args.model_mb)
    log(f"listening on {args.socket} for the jobs of process {args.parent}")
    if not worker.models:
        log("a GPU is visible: models are not loaded ahead (each job loads its own onto the GPU)")
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
