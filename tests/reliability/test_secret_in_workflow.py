"""An API key echoed back by an OpenAI-compatible server reaches no file of a workflow run.

The CareQA translation stage talks to a local server that echoes the Authorization header into its
error (status 401) and into its replies (status 200); after the run, no byte of the key is under
results/ (logs included) or .snakemake/, nor in Snakemake's own console output.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import yaml
from test_model_and_endpoint_errors import KEY, _EchoServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from workflow_runs import make_workdir, snakemake

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("status", [401, 200])
def test_an_echoed_key_is_nowhere_under_results_or_snakemake_state(repo_root, tmp_path, monkeypatch, status):
    monkeypatch.setenv("CAREVAL_ECHO_KEY", KEY)
    config = yaml.safe_load((repo_root / "config" / "config.yaml").read_text())
    config["careqa"] = copy.deepcopy(config["careqa"])
    for edition in config["careqa"]["editions"]:
        edition.update({part: str(repo_root / edition[part]) for part in ("booklet", "key")})
    with _EchoServer(status) as server:
        config["careqa"]["translator"] = {
            "endpoint": {
                "model": "gpt-4",
                "base_url": server.base_url,
                "api_key_env": "CAREVAL_ECHO_KEY",
                "concurrency": 1,
            },
            "max_new_tokens": 16,
        }
        work = make_workdir(repo_root, tmp_path / "work", config)
        result = snakemake(["--cores", "1", "results/careqa/CareQA_en.parquet"], work, timeout=600)
        assert server.requests > 0
    assert (result.returncode != 0) == (status == 401), result.stderr[-3000:]
    # a fragment long enough to be the key, short enough to survive any cut of an excerpt
    fragments = [KEY[i : i + 12] for i in range(len(KEY) - 12)]
    leaked = [
        str(path.relative_to(work))
        for folder in ("results", ".snakemake")
        for path in (work / folder).rglob("*")
        if path.is_file() and any(f.encode() in path.read_bytes() for f in fragments)
    ]
    assert leaked == []
    assert not any(f in result.stdout + result.stderr for f in fragments)
    assert any((work / "results" / "logs" / "careqa").rglob("translate.log"))
