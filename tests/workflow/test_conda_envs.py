"""workflow/envs/: the conda environments of `snakemake --sdm conda` install exactly pyproject.toml's pins.

conda cannot run here, so the files are checked for consistency only: each env's pip list against
pyproject.toml's dependencies (read with tomllib, not through careval), and every rule's `conda:` naming one
of the two files (the rule files' text; that every rule has a `conda:` is `snakemake --lint`'s check,
tests/workflow/test_snakemake_lint.py).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ENVS = REPO / "workflow" / "envs"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
EXPECTED = {
    "careval.yaml": PROJECT["dependencies"],
    "careval-gpu.yaml": PROJECT["dependencies"] + PROJECT["optional-dependencies"]["gpu"],
}


def pip_pins(env_file: Path) -> list[str]:
    env = yaml.safe_load(env_file.read_text())
    sections = [item["pip"] for item in env["dependencies"] if isinstance(item, dict)]
    assert len(sections) == 1, f"{env_file.name}: one pip: section expected"
    return sections[0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_env_pins_equal_pyproject(name):
    assert pip_pins(ENVS / name) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_env_has_python_and_pip_from_conda(name):
    conda_deps = [d for d in yaml.safe_load((ENVS / name).read_text())["dependencies"] if isinstance(d, str)]
    assert f"python={PROJECT['requires-python'].removeprefix('>=')}" in conda_deps
    assert "pip" in conda_deps


def test_post_deploy_scripts_install_careval_without_deps():
    scripts = {name: (ENVS / name.replace(".yaml", ".post-deploy.sh")).read_text() for name in EXPECTED}
    assert len(set(scripts.values())) == 1, "the two post-deploy scripts differ"
    assert "pip install --quiet --no-deps --no-build-isolation -e" in next(iter(scripts.values()))


def rule_envs() -> dict[str, str]:
    """rule name -> the env file its `conda:` names, for every rule with an action (script/shell/run)."""
    envs = {}
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        rule, seen = None, {}
        for line in path.read_text().splitlines():
            if m := re.match(r"\s*(?:rule|checkpoint)\s*(\w*)\s*:", line):
                rule = f"{path.name}:{m.group(1) or '<anonymous>'}:{len(envs) + len(seen)}"
                seen[rule] = None
            elif rule and (m := re.match(r'\s*"\.\./envs/([\w.-]+)"', line)):
                seen[rule] = m.group(1)
            elif rule and re.match(r"\s*(script|shell|run):", line):
                envs[rule] = seen[rule]
                rule = None
    return envs


def test_every_rule_names_an_existing_env():
    envs = rule_envs()
    assert len(envs) > 20
    assert {rule: env for rule, env in envs.items() if env not in EXPECTED} == {}
    # the jobs that load an LLM get vLLM; inference at least
    assert any(rule.startswith("inference.smk:infer_open") and env == "careval-gpu.yaml" for rule, env in envs.items())
