"""After `kill -9` of snakemake, the repository's profiles make the rerun: --unlock, then the same command.

Measured on a one-rule workflow whose job writes half its output, then waits: snakemake 9 leaves
its lock (no stale-lock detection) and the job's output marked incomplete.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SNAKEFILE = """
rule half_written:
    output: "out.txt"
    shell: "echo $$ > job.pid; echo half > {output}; exec sleep 600"
"""
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _snakemake(workdir, *args):
    return subprocess.run([*SNAKEMAKE, *args], cwd=workdir, capture_output=True, text=True, timeout=300)


def _kill_snakemake_mid_job(workdir, profile_args):
    # a session of its own: the kill reaches snakemake alone, as `kill -9 <its pid>` does
    process = subprocess.Popen(
        [*SNAKEMAKE, *profile_args, "--cores", "1"],
        cwd=workdir,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # mid-job means the output half-written and marked incomplete: snakemake's local executor marks a job
    # only after handing it to its thread pool, so on a busy machine the job can write first (a kill in
    # that window leaves an unmarked output, which a rerun takes as done: seen once in CI on 2 cores)
    incomplete = workdir / ".snakemake" / "incomplete"
    deadline = time.monotonic() + 120
    while not ((workdir / "out.txt").exists() and incomplete.is_dir() and any(incomplete.iterdir())):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    # the job outlives snakemake; the README says to stop it before rerunning: here by its PID
    _kill_job(workdir)


def _kill_job(workdir):
    try:
        os.kill(int((workdir / "job.pid").read_text()), signal.SIGKILL)
    except ProcessLookupError:  # gone with its snakemake's process group
        pass


@pytest.mark.parametrize("profile", ["local", "slurm"])
def test_after_kill_9_unlock_then_the_same_command_resumes(tmp_path, repo_root, profile):
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE)
    shutil.copytree(repo_root / profile, workdir / "profile")
    # the SLURM profile's executor needs a cluster: the same settings with the local executor
    config = (workdir / "profile" / "config.v8+.yaml").read_text().replace("executor: slurm", "executor: local")
    (workdir / "profile" / "config.v8+.yaml").write_text(config)
    command = ["--profile", "profile", "--cores", "1"]
    _kill_snakemake_mid_job(workdir, command[:2])

    again = _snakemake(workdir, *command)
    assert again.returncode == 1 and "LockException" in again.stderr
    assert _snakemake(workdir, *command, "--unlock").returncode == 0
    # the same command now remakes the half-written output: the job waits 600 s, so stop it once restarted
    rerun = subprocess.Popen(
        [*SNAKEMAKE, *command],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    first_pid = (workdir / "job.pid").read_text()
    deadline = time.monotonic() + 120
    while (workdir / "job.pid").read_text() == first_pid:
        assert rerun.poll() is None, rerun.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(rerun.pid, signal.SIGKILL)
    _kill_job(workdir)
    output = rerun.communicate(timeout=60)[0]
    assert "IncompleteFilesException" not in output and "rule half_written" in output


def test_without_the_profile_the_rerun_stops_on_the_incomplete_output(tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE)
    _kill_snakemake_mid_job(workdir, [])
    assert _snakemake(workdir, "--cores", "1", "--unlock").returncode == 0
    rerun = _snakemake(workdir, "--cores", "1")
    assert rerun.returncode == 1 and "IncompleteFilesException" in rerun.stderr
    assert Path(workdir / "out.txt").read_text() == "half\n"
