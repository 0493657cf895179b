"""A run whose translator is a local server that echoes the API key back (in an error, or in every answer) writes the
key nowhere: not under results/ or .snakemake/ (logs and provenance), not on the console, whatever its length."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from test_model_and_endpoint_errors import _EchoServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TARGET = "results/careqa/CareQA_en.parquet"
# a 1-character key (one the demo exam, tracebacks and Snakemake's output never hold), a 7- and a 40-character one
KEYS = ["\u00a4", "k7sHort", "sk-" + "Q9x" * 12 + "Z"]


def _config(base_url: str) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for edition in config["careqa"]["editions"]:  # the demo exam's files, read from the repository
        edition.update({part: str(REPO / edition[part]) for part in ("booklet", "key")})
    config["careqa"]["translator"] = {
        "endpoint": {"model": "gpt-4", "base_url": base_url, "api_key_env": "CAREVAL_ECHO_KEY", "concurrency": 1}
    }
    return config


def _workdir(work: Path, config: dict) -> Path:
    """What a clone holds (no results), with `config` as config/config.yaml."""
    (work / "config").mkdir(parents=True)
    shutil.copy(REPO / "Snakefile", work)
    shutil.copytree(REPO / "workflow", work / "workflow")
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return work


def _texts(folder: Path):
    """(file, text) of every file under `folder`: parquet files by their string cells, the others as text."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            yield path, "\n".join(str(v) for column in frame.columns for v in frame[column].to_list())
        else:
            yield path, path.read_bytes().decode("utf-8", "replace")


@pytest.mark.parametrize("status", [401, 200])
@pytest.mark.parametrize("key", KEYS, ids=lambda key: f"{len(key)}-character key")
def test_an_echoed_key_of_any_length_is_written_nowhere(tmp_path, key, status):
    with _EchoServer(status) as server:
        work = _workdir(tmp_path / "careval", _config(server.base_url))
        env = {**os.environ, "CAREVAL_ECHO_KEY": key, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        result = subprocess.run(
            [SNAKEMAKE, "--cores", "1", TARGET], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
    assert server.requests > 0, result.stderr[-3000:]  # the key was sent, and echoed back
    console = result.stdout + result.stderr
    assert (result.returncode == 0) == (status == 200), console[-3000:]
    assert key not in console
    assert "[REDACTED]" in console or status == 200
    texts = {path: text for folder in ("results", ".snakemake") for path, text in _texts(work / folder)}
    assert [str(path) for path, text in texts.items() if key in text] == []
    # the echo was written, redacted: in the error the log keeps (401), in the translations (200)
    echoed = [path.name for path, text in texts.items() if "Bearer [REDACTED]" in text or "key [REDACTED]" in text]
    assert "translate.log" in echoed if status == 401 else "CareQA_en.parquet" in echoed
