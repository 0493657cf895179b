"""results/manifest.json: it changes when a model's weights or a dataset change, and not when nothing did."""

from __future__ import annotations

import hashlib
import json
import os

import polars as pl
import pytest

from careval.cli import main
from careval.manifest import ManifestJob, build_manifest, diff, essentials


@pytest.fixture
def run(tmp_path, monkeypatch):
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"\x01" * 64)
    (model / "config.json").write_text('{"hidden_size": 8}')
    (model / "README.md").write_text("not a weight file")
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    pl.DataFrame({"id": ["a", "b", "c"]}).write_parquet(datasets / "qa.parquet")
    logs = tmp_path / "results" / "logs" / "infer_open" / "tiny"
    logs.mkdir(parents=True)
    (logs / "qa.log").write_text("loaded model tiny (hf, gpus=0, dtype=float32) in 0.1s\n")
    job = ManifestJob(
        config={"models": {"tiny": {"dtype": "bfloat16_if_native"}}},
        models={
            "model:tiny": {"weights": "local:tiny", "backend": "hf", "dtype": "bfloat16_if_native", "path": str(model)}
        },
        benchmarks=("qa",),
        datasets_dir=str(datasets),
        logs_dir=str(tmp_path / "results" / "logs"),
        results_dir=str(tmp_path / "results"),
    )
    return job, model, datasets, tmp_path


def _manifest(job, tmp_path):
    return build_manifest(job, tmp_path)  # tmp_path: no git checkout


def test_nothing_changed_nothing_differs_but_the_dates(run):
    job, model, _, tmp_path = run
    first, second = _manifest(job, tmp_path), _manifest(job, tmp_path)
    assert diff(first, second) == []
    # the weights digest is the request cache's content digest of the folder: the canonical JSON of (name, file
    # sha256) pairs over its files, a model card left out
    pairs = [
        [name, hashlib.sha256((model / name).read_bytes()).hexdigest()] for name in ("config.json", "model.safetensors")
    ]
    tiny = first["models"]["model:tiny"]
    assert tiny["weights_sha256"] == hashlib.sha256(json.dumps(pairs, separators=(",", ":")).encode()).hexdigest()
    assert tiny["as_run"] == ["hf float32"]  # the dtype the job's log says, not the configured bfloat16_if_native
    assert first["datasets"]["qa"]["rows"] == 3
    assert first["careval"]["commit"] is None and first["careval"]["dirty"] is None  # not a checkout
    assert any("tiny" in line and "hf float32" in line for line in essentials(first))


def test_changed_weights_are_named(run):
    job, model, _, tmp_path = run
    before = _manifest(job, tmp_path)
    weights = model / "model.safetensors"
    stat = weights.stat()
    weights.write_bytes(b"\x02" * 64)  # same size: the modification time tells the digest cache
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert [line.split(": ")[0] for line in diff(before, _manifest(job, tmp_path))] == [
        "models.model:tiny.weights_sha256"
    ]


def test_a_changed_dataset_is_named_with_its_rows(run):
    job, _, datasets, tmp_path = run
    before = _manifest(job, tmp_path)
    pl.DataFrame({"id": ["a", "b"]}).write_parquet(datasets / "qa.parquet")
    lines = diff(before, _manifest(job, tmp_path))
    assert "datasets.qa.rows: 3 -> 2" in lines
    assert [line.split(": ")[0] for line in lines] == ["datasets.qa.rows", "datasets.qa.sha256"]


def test_the_command_names_the_difference_and_exits_1(run, capsys):
    job, _, _, tmp_path = run
    a = _manifest(job, tmp_path)
    b = json.loads(json.dumps(a))
    b["machine"]["cpu_flags"] = [*a["machine"]["cpu_flags"], "a_made_up_flag"]
    b["packages"]["scipy"] = "0.0"
    for name, manifest in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(json.dumps(manifest))
    assert main(["manifest", "diff", str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 0
    assert main(["manifest", "diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 1
    out = capsys.readouterr().out
    assert "machine.cpu_flags: only in B: a_made_up_flag" in out and "packages.scipy: " in out
