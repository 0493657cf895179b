"""The `careval plan` command prints what a config will run, or one line saying what is wrong with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _careval(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "careval.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_plan_of_the_paper_config_shows_each_models_gpus_and_the_judge():
    done = _careval("plan", "config/paper.yaml")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(
        line.startswith("  Llama-3.1-70B-Instruct: vllm, meta-llama/Llama-3.1-70B-Instruct, gpus=4") for line in lines
    )
    assert any(line.startswith("  judge: prometheus-7b-v2.0 (vllm") for line in lines)
    assert any(line.startswith("  olaph [open]: ") and "relaxed_perplexity" in line for line in lines)


def test_a_bad_config_is_one_line_and_exit_status_2(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["models"]["gemma3-270m"]["size"] = "huge"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    done = _careval("plan", str(path))
    assert done.returncode == 2
    assert done.stderr == (
        f"careval config error: {path}: models.gemma3-270m.size: 'huge' is not a key of model_sizes (have: none)\n"
    )
    path.write_text("models: [unclosed\n")
    assert _careval("plan", str(path)).stderr == f"careval config error: {path}: not valid YAML (line 2)\n"
