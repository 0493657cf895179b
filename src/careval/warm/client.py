"""A job's side of the warm worker: hand the script to the run's worker and exit with the job's status.

Standard library only: this runs before the script's own imports, in every job.
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import sys
from typing import Any

# The worker's socket; set by the Snakefile's onstart for the jobs of a local run only.
SOCKET_ENV = "CAREVAL_WARM_SOCKET"
# request: its length, then the pickled request (and the script's stdin, stdout and stderr as descriptors);
# replies: STARTED and the job's process id (also its process group) and RAN and its exit status (negative:
# killed by that signal), which the job sends itself and the worker again once it has reaped the job; or only
# REFUSED (nothing of the job ran)
HEADER = struct.Struct("!Q")
REPLY = struct.Struct("!cq")
STARTED, RAN, REFUSED = b"S", b"R", b"N"
DONE = b"D"  # the script's last word: it has the status (closing without it means the script was cancelled)

# True in a job the worker forked: offload() then lets the script run on, here.
in_worker = False


def offload(snakemake: Any, script: str) -> None:
    """Before a job's body (careval.jobs.run, at the top of every job): run the job in the run's warm worker, if
    there is one, and exit with its status. Returns (the job then runs in this process) where there is no worker to
    take it: none was started, it has ended, or this is the worker's fork of the job."""
    path = os.environ.get(SOCKET_ENV)
    if in_worker or not path:
        return
    request = {
        "script": os.path.realpath(script),
        "snakemake": snakemake,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "argv": list(sys.argv),
        "sys_path": list(sys.path),
    }
    try:
        payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # Snakemake pickled the job for the script, but a script may have added to it
        return
    streams = [_open_or_null(fd) for fd in (0, 1, 2)]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        socket.send_fds(sock, [HEADER.pack(len(payload))], streams)
        sock.sendall(payload)
    except OSError:
        sock.close()
        return  # the worker is gone (or never came up): nothing of the job ran there, so it runs here
    sys.stdout.flush()
    sys.stderr.flush()
    job = 0
    while True:  # the job's own RAN can come before the worker's STARTED; the first RAN is the status
        kind, value = _reply(sock)
        if kind == REFUSED:
            return
        if kind == STARTED:
            job = value
        elif kind == RAN:
            status = value
            try:
                sock.sendall(DONE)
            except OSError:
                pass
            break
        else:
            # the worker ended while the job ran (its death ends the job, but not what the job started):
            # whether the job finished is unknown, so it fails, and the same command remakes it
            _kill_group(job)
            print(
                f"careval: the warm worker ({path}) ended before this job did; run the command again", file=sys.stderr
            )
            os._exit(1)
    if status < 0:
        print(f"careval: the job was killed by signal {-status}", file=sys.stderr)
        os._exit(128 - status)
    os._exit(status)


def _open_or_null(fd: int) -> int:
    """`fd` if it is open, else /dev/null (the fork's stream is then discarded, as it would be here)."""
    try:
        os.fstat(fd)
        return fd
    except OSError:
        return os.open(os.devnull, os.O_RDWR)


def _reply(sock: socket.socket) -> tuple[bytes, int]:
    """The worker's next reply; (b"", 0) where the connection ended first."""
    data = b""
    while len(data) < REPLY.size:
        try:
            chunk = sock.recv(REPLY.size - len(data))
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return REPLY.unpack(data) if len(data) == REPLY.size else (b"", 0)


def _kill_group(group: int) -> None:
    if group > 0:
        try:
            os.killpg(group, 9)  # SIGKILL
        except OSError:
            pass
