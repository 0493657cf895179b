"""An API key echoed back by an OpenAI-compatible server reaches no file of a workflow run, whatever its length.

The CareQA translation stage talks to a local server that echoes the Authorization header into its
error (status 401) and into its replies (status 200); after the run, the key is nowhere under results/
(logs included) or .snakemake/, nor in Snakemake's own console output: a 40-character key (no byte of it, not
even a 12-character fragment that survives an excerpt's cut), a 7-character one and a 1-character one (in the
text of every file, parquet files by their string cells: a single byte turns up in any binary by chance).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from test_model_and_endpoint_errors import KEY

from support.fake_openai import FakeOpenAIServer, echo_headers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from workflow_runs import make_workdir, snakemake

pytestmark = pytest.mark.slow

# a 1-character key (one the demo exam, tracebacks and Snakemake's output never hold), a 7- and a 40-character one
KEYS = ["\u00a4", "k7sHort", KEY[:40]]


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
def test_an_echoed_key_is_nowhere_under_results_or_snakemake_state(repo_root, tmp_path, monkeypatch, key, status):
    monkeypatch.setenv("CAREVAL_ECHO_KEY", key)
    config = yaml.safe_load((repo_root / "config" / "config.yaml").read_text())
    config["careqa"] = copy.deepcopy(config["careqa"])
    for edition in config["careqa"]["editions"]:
        edition.update({part: str(repo_root / edition[part]) for part in ("booklet", "key")})
    with FakeOpenAIServer(echo_headers(status)) as server:
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
        assert len(server.requests) > 0
    assert (result.returncode != 0) == (status == 401), result.stderr[-3000:]
    console = result.stdout + result.stderr
    texts = {path: text for folder in ("results", ".snakemake") for path, text in _texts(work / folder)}
    assert [str(path.relative_to(work)) for path, text in texts.items() if key in text] == []
    assert key not in console
    if len(key) >= 12:
        # a fragment long enough to be the key, short enough to survive any cut of an excerpt
        fragments = [key[i : i + 12] for i in range(len(key) - 12)]
        leaked = [
            str(path.relative_to(work))
            for folder in ("results", ".snakemake")
            for path in (work / folder).rglob("*")
            if path.is_file() and any(f.encode() in path.read_bytes() for f in fragments)
        ]
        assert leaked == []
        assert not any(f in console for f in fragments)
    # the echo was written, redacted: in the error the translate log keeps (401), in the translations (200)
    echoed = [path.name for path, text in texts.items() if "Bearer [REDACTED]" in text or "key [REDACTED]" in text]
    assert "translate.log" in echoed if status == 401 else "CareQA_en.parquet" in echoed
