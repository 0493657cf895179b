"""careval.runlock decides about a lock a killed snakemake left: released only when its run is surely gone."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from careval.runlock import LOCKS, OWNER, _boot_id, check_lock, record_owner, running_snakemakes

COMMAND = ["/usr/bin/snakemake", "--cores", "2", "results/correlations.pdf"]
UNLOCK = "snakemake --unlock --cores 2 results/correlations.pdf"


@pytest.fixture
def locked(tmp_path):
    (tmp_path / LOCKS).mkdir(parents=True)
    (tmp_path / LOCKS / "0.output.lock").write_text("results/correlations.pdf\n")
    return tmp_path


def _owner(work, **changes):
    record_owner(work, local_jobs=True)
    owner = {**json.loads((work / OWNER).read_text()), **changes}
    (work / OWNER).write_text(json.dumps(owner))


def test_no_lock_nothing_to_say(tmp_path):
    assert check_lock(tmp_path, COMMAND) is None


def test_the_lock_of_a_run_killed_here_is_released(locked):
    _owner(locked, pid=2**22 + 1)  # no such process
    assert check_lock(locked, COMMAND) == (
        f"careval: released the lock of the run that was killed here (pid {2**22 + 1} ended without releasing it); going on"
    )
    assert not (locked / LOCKS).exists()


def test_after_a_restart_of_this_machine_the_lock_is_stale(locked):
    _owner(locked, boot="another-boot")
    assert check_lock(locked, COMMAND).endswith("(this machine restarted since); going on")


def test_a_live_snakemake_in_the_directory_keeps_its_lock(locked, tmp_path_factory):
    """Whatever the record says: a snakemake process working in the directory holds it."""
    _owner(locked, pid=2**22 + 1)
    fake = tmp_path_factory.mktemp("bin") / "snakemake"  # `python .../snakemake ...`, as the entry point runs
    fake.write_text("import time\ntime.sleep(60)\n")
    process = subprocess.Popen([sys.executable, str(fake), "--cores", "2"], cwd=locked)
    try:
        deadline = time.monotonic() + 10
        while process.pid not in running_snakemakes(locked):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert check_lock(locked, COMMAND) == (
            f"careval: a snakemake still running in this directory (pid {process.pid}) holds its lock; "
            "wait for it, or stop it, then type the same command again"
        )
        assert (locked / LOCKS / "0.output.lock").exists()
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    "owner, where",
    [
        (None, "a run that left no owner (killed before it started its jobs)"),
        ({"host": "node-7"}, "a run on host node-7 (a shared filesystem)"),
        ({"local_jobs": False}, "a run whose jobs ran on a cluster (they may outlive it: `squeue --me`)"),
    ],
)
def test_what_cannot_be_decided_here_names_the_command(locked, owner, where):
    if owner is not None:
        _owner(locked, **owner)
    assert check_lock(locked, COMMAND) == (
        f"careval: the directory is locked by {where}; once nothing of it runs, type: {UNLOCK}"
    )
    assert (locked / LOCKS / "0.output.lock").exists()


def test_the_owner_record_names_this_machine(tmp_path):
    (tmp_path / ".snakemake").mkdir()
    record_owner(tmp_path, local_jobs=True)
    owner = json.loads((tmp_path / OWNER).read_text())
    assert (owner["host"], owner["boot"], owner["local_jobs"]) == (socket.gethostname(), _boot_id(), True)
