"""A working directory's Snakemake lock after a crash: released when its run is surely gone, else one line saying what to type.

Snakemake locks the files a run reads and writes (.snakemake/locks/) and removes the lock when it ends; a run
killed with `kill -9` (or a closed session) leaves it, and the next run stops with "Directory cannot be locked".
Snakemake records no owner, so careval does: when a run has its lock, the Snakefile's onstart writes the host,
its boot and whether the jobs run on this machine (:func:`record_owner`). The next run's Snakefile then decides
(:func:`check_lock`):

- a snakemake process still runs in this directory on this machine: the lock is live, never touched;
- the owner ran here, on this boot, with local jobs, and no snakemake runs here any more (or the machine was
  rebooted since): the lock is stale and released, with one printed line;
- anything else (another host, a cluster's jobs that may outlive their snakemake, no owner recorded): it cannot
  be decided from here, and the line says which command releases it once nothing runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
from pathlib import Path

LOCKS = Path(".snakemake") / "locks"
OWNER = Path(".snakemake") / "careval_lock_owner.json"


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def record_owner(workdir: Path, local_jobs: bool) -> None:
    """In a run that holds the lock (onstart): who holds it, for the next run to judge."""
    owner = {"host": socket.gethostname(), "boot": _boot_id(), "pid": os.getpid(), "local_jobs": local_jobs}
    (workdir / OWNER).write_text(json.dumps(owner) + "\n")


def _is_snakemake(cmdline: list[str]) -> bool:
    """A main snakemake process: `snakemake ...`, `python .../snakemake ...` or `python -m snakemake ...`."""
    names = [os.path.basename(part) for part in cmdline[:2]]
    return "snakemake" in names or cmdline[1:3] == ["-m", "snakemake"]


def running_snakemakes(workdir: Path) -> list[int]:
    """The snakemake processes of this machine working in `workdir`, this one aside."""
    here, found = os.path.realpath(workdir), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if _is_snakemake(cmdline) and os.path.realpath(os.readlink(entry / "cwd")) == here:
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return sorted(found)


def check_lock(workdir: Path, command: list[str]) -> str | None:
    """Release a stale lock of `workdir`; the one line to print, or None where nothing is locked.
    `command`: the command line of this run (the release command repeats its target and options)."""
    locks = workdir / LOCKS
    if not locks.is_dir() or not any(locks.glob("*.lock")):
        return None
    live = running_snakemakes(workdir)
    if live:
        return (
            f"careval: a snakemake still running in this directory (pid {', '.join(map(str, live))}) holds its lock; "
            f"wait for it, or stop it, then type the same command again"
        )
    try:
        owner = json.loads((workdir / OWNER).read_text())
    except (OSError, ValueError):
        owner = None
    here = (socket.gethostname(), _boot_id())
    if owner and owner.get("host") == here[0] and owner.get("local_jobs"):
        if owner.get("boot") == here[1] or not here[1]:
            reason = f"pid {owner.get('pid')} ended without releasing it"
        else:
            reason = "this machine restarted since"
        shutil.rmtree(locks, ignore_errors=True)
        return f"careval: released the lock of the run that was killed here ({reason}); going on"
    unlock = shlex.join(["snakemake", "--unlock", *command[1:]])
    if owner is None:
        where = "a run that left no owner (killed before it started its jobs)"
    elif owner.get("host") != here[0]:
        where = f"a run on host {owner.get('host')} (a shared filesystem)"
    else:
        where = "a run whose jobs ran on a cluster (they may outlive it: `squeue --me`)"
    return f"careval: the directory is locked by {where}; once nothing of it runs, type: {unlock}"
