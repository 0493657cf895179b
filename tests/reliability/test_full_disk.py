"""A full disk ends a job with one line that names both what it was writing and that no space is left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from careval.analysis.figures.report import save_pages
from careval.joblog import job_log


def _job(outputs: list[str], log: Path, write) -> subprocess.CompletedProcess:
    """A job as a rule's script runs it, in a process of its own: `write()` inside job_log."""
    code = (
        "import sys, polars as pl\n"
        "from careval.joblog import job_log\n"
        f"with job_log({str(log)!r}, {outputs!r}):\n"
        f"    {write}\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_library_error_without_the_path_names_the_jobs_outputs(tmp_path):
    """polars says "No space left on device (os error 28)" and no file: the line names the job's outputs."""
    outputs = [str(tmp_path / "scores" / "rouge.parquet"), str(tmp_path / "scores" / "bleu.parquet")]
    result = _job(outputs, tmp_path / "job.log", "pl.DataFrame({'a': [1, 2]}).write_parquet('/dev/full')")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"no space left on device writing {outputs[0]} (or another of this job's 2 outputs): "), (
        result.stderr
    )
    assert last.endswith("free some space and type the same command again")
    assert "Traceback" not in result.stderr  # the one line, not the traceback (that is in the log)
    assert "os error 28" in (tmp_path / "job.log").read_text()


def test_an_oserror_with_its_file_names_that_file(tmp_path):
    """An error that carries its file (as shutil's copies raise it) names that one file."""
    target = tmp_path / "models" / "config.json"
    result = _job(
        [str(tmp_path / "other.parquet")], tmp_path / "job.log", f"raise OSError(28, 'No space left', {str(target)!r})"
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"no space left on device writing {target}: ")


def test_other_errors_keep_their_traceback(tmp_path):
    result = _job([], tmp_path / "job.log", "raise ValueError('a bad row')")
    assert result.returncode == 1 and "Traceback" in result.stderr and "ValueError: a bad row" in result.stderr
    with pytest.raises(ValueError), job_log(tmp_path / "in-process.log"):
        raise ValueError("in this process too")


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KB tmpfs (root only: CI and this machine run as root)."""
    folder = tmp_path / "figures"
    folder.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)]).returncode == 0
    )
    if not mounted:
        pytest.skip("mounting a small tmpfs needs root")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_drawing_the_pngs_on_a_full_disk_names_the_folder_and_the_cause(tmp_path, small_disk):
    """The PNGs are drawn by a forked process: its full disk is the parent's error, with the folder."""
    pages = []
    for name in ("a", "b", "c"):
        figure, axis = plt.subplots(figsize=(12, 12))
        axis.imshow([[i * j for i in range(400)] for j in range(400)])
        pages.append((name, figure))
    with pytest.raises(OSError) as error:
        save_pages(pages, tmp_path / "report.pdf", small_disk, workers=2)
    assert error.value.errno == 28 and error.value.filename == str(small_disk)
    from careval.joblog import disk_full, disk_full_message

    message = disk_full_message(disk_full(error.value), ["results/correlations.pdf"])
    assert message.startswith(f"no space left on device writing {small_disk}: ")


def test_a_broken_model_folder_is_one_line_on_the_console(tmp_path, tiny_llama_dir):
    """Its config.json cut short: the file and the JSON error, not transformers' 100-line traceback."""
    import shutil

    folder = tmp_path / "broken"
    shutil.copytree(tiny_llama_dir, folder)
    (folder / "config.json").write_text('{"model_type": "llama",')
    write = f"from careval.backends.hf.backend import HFBackend; HFBackend.load('t', {str(folder)!r})"
    result = _job([], tmp_path / "job.log", write)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"{folder / 'config.json'}: not valid JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 24 (char 23)); prepare or copy the model folder again"
    ]
    assert "Traceback" in (tmp_path / "job.log").read_text()
