"""The manual and the README as tested examples (issue 47): every YAML snippet is a config the schema accepts,
the quick start's commands run (dry where a run is slow), the configuration reference lists every key of the
schema, and the site builds with no warning (`mkdocs build --strict`)."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError, load_schema, read_config_file, validate_config

REPO = Path(__file__).resolve().parents[1]
# the pages a reader sees: the README, the manual's own pages (the generated reference aside), the catalog's
# config/README.md
DOC_FILES = sorted([REPO / "README.md", REPO / "config" / "README.md", *(REPO / "docs").rglob("*.md")])
# the comment above a ```yaml fence says what the snippet is: a whole config, or a fragment merged into a named one
MARKER = re.compile(r"<!-- snippet: (whole config|fragment of (?P<base>\S+)) -->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)\s*$")


def yaml_snippets(text: str) -> list[tuple[int, str, str | None]]:
    """(line, snippet text, marker) of every ```yaml block in Markdown `text`; the marker is the comment on the
    last non-blank line above the fence (None without one)."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        if fence["lang"] == "yaml":
            above = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            indent = len(fence["indent"])
            body = "\n".join(line[indent:] for line in lines[i + 1 : end])
            found.append((i + 1, body, above if MARKER.fullmatch(above) else None))
        i = end + 1
    return found


def merged(base: dict, fragment: dict) -> dict:
    """`fragment` over `base`: mappings merged key by key, any other value replaced (as a second --configfile)."""
    result = copy.deepcopy(base)
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def check_snippet(body: str, marker: str | None, root: Path = REPO) -> None:
    """Parse the snippet and validate it against the schema, whole or merged into its named config; raises
    ConfigError (or a ValueError naming what is wrong with the marker)."""
    if marker is None:
        raise ValueError(
            "a yaml snippet needs a marker above it: <!-- snippet: whole config --> or "
            "<!-- snippet: fragment of config/<file>.yaml -->"
        )
    data = yaml.safe_load(body)
    if not isinstance(data, dict):
        raise ValueError("a config snippet is a YAML mapping")
    base = MARKER.fullmatch(marker)["base"]
    validate_config(merged(read_config_file(root / base), data) if base else data, load_schema())


def all_snippets() -> list[tuple[str, int, str, str | None]]:
    return [
        (str(path.relative_to(REPO)), line, body, marker)
        for path in DOC_FILES
        for line, body, marker in yaml_snippets(path.read_text())
    ]


SNIPPETS = all_snippets()


def test_the_documents_hold_yaml_snippets():
    # the README's five examples and the manual's pages: a parse that found none would test nothing
    files = {file for file, *_ in SNIPPETS}
    assert "README.md" in files and len(SNIPPETS) >= 10, sorted(files)


@pytest.mark.parametrize("file, line, body, marker", SNIPPETS, ids=[f"{s[0]}:{s[1]}" for s in SNIPPETS])
def test_yaml_snippet_is_a_valid_config(file, line, body, marker):
    try:
        check_snippet(body, marker)
    except (ConfigError, ValueError) as error:
        pytest.fail(f"{file}:{line}: {error}")


def test_a_misspelt_key_fails_the_snippet_check():
    """The check is not vacuous: the README's own benchmark snippet with one key misspelt is refused, naming it, and
    so is the same snippet merged into the demo config, and one without a marker."""
    readme = (REPO / "README.md").read_text()
    _line, body, marker = next(s for s in yaml_snippets(readme) if "mcqa_style" in s[1])
    check_snippet(body, marker)  # as written: valid
    misspelt = body.replace("mcqa_style", "mcqa_styel", 1)
    with pytest.raises(ConfigError, match="mcqa_styel"):
        check_snippet(misspelt, marker)
    with pytest.raises(ConfigError, match="mcqa_styel"):
        check_snippet(misspelt, "<!-- snippet: fragment of config/config.yaml -->")
    # a misspelt top-level section and a misspelt model key, in a whole config
    whole = "models: {m: {source: 'hf:x/y', backend: hf}}\nbenchmarks: {demo_mcqa: null}\n"
    check_snippet(whole, "<!-- snippet: whole config -->")
    with pytest.raises(ConfigError, match="backnd"):
        check_snippet(whole.replace("backend", "backnd"), "<!-- snippet: whole config -->")
    with pytest.raises(ConfigError, match="metrcs"):
        check_snippet(whole + "metrcs: {skip: [bleurt]}\n", "<!-- snippet: whole config -->")
    with pytest.raises(ValueError, match="marker"):
        check_snippet(whole, None)
    # an unmarked fence is found and reported unmarked
    assert yaml_snippets("text\n\n```yaml\na: 1\n```\n") == [(3, "a: 1", None)]


# --- the quick start's commands ------------------------------------------------------------------------------------

# How the test runs each command of the README's "Two commands" block: the demo as a dry run (`-n`: it plans every
# job of results/correlations.pdf; the run itself is tests/workflow/test_demo_dag.py's), the test-suite collected
# without running (`--collect-only`: the suite runs as CI's own command).
DRY = {"bash run.sh demo": ["-n"], "bash run.sh test": ["-n", "0", "--collect-only", "-q"]}


def quick_start_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Two commands\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return [
        line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines() if line.split("#")[0].strip()
    ]


def test_quick_start_lists_the_two_commands():
    assert quick_start_commands() == ["bash run.sh demo", "bash run.sh test"]


def _setup_is_current() -> bool:
    """run.sh installs the project first where its stamp is older than pyproject.toml; a test must not install."""
    stamp = Path(sys.prefix) / ".careval-installed"
    return stamp.exists() and stamp.stat().st_mtime >= (REPO / "pyproject.toml").stat().st_mtime


@pytest.mark.slow
@pytest.mark.parametrize("command", quick_start_commands())
def test_quick_start_command_runs(command, tmp_path):
    """Each command as typed, in a clone-like copy whose .venv is this test's environment (set up already: CI's
    `bash run.sh test` did it; run.sh's own set-up is then its stamp check)."""
    if command not in DRY:
        pytest.fail(f"the README's quick start has a command this test does not know how to run: {command}")
    if not _setup_is_current():
        pytest.skip("pyproject.toml is newer than the environment's set-up stamp: run.sh would install")
    work = tmp_path / "clone"
    # what a clone holds: the files git tracks (and new ones it would track), none it ignores (no results, models)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    for name in listed.stdout.splitlines():
        if not (REPO / name).is_file():  # deleted in the working tree
            continue
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, work / name)
    (work / ".venv").symlink_to(Path(sys.prefix))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TEST_WORKERS": "0"}
    result = subprocess.run(
        ["timeout", "-k", "10", "600", *command.split(), *DRY[command]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    if command == "bash run.sh demo":
        assert "This was a dry-run" in out and "correlations" in out and "infer_open" in out
    else:
        collected = re.search(r"(\d+) tests? collected", out)
        assert collected and int(collected[1]) > 1000, out[-2000:]


# --- the configuration reference and the site ------------------------------------------------------------------------


def _reference_module():
    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    try:
        import config_reference
    finally:
        sys.path.pop(0)
    return config_reference


def _schema_keys(node, path: str = "") -> set[str]:
    """Every key name under a `properties` anywhere in the schema (its $defs included), walked independently of
    the generator: the names the reference must show."""
    keys = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                keys |= set(value)
            keys |= _schema_keys(value)
    elif isinstance(node, list):
        for value in node:
            keys |= _schema_keys(value)
    return keys


def test_config_reference_lists_every_key_with_its_facts():
    schema = load_schema()
    page = _reference_module().reference(schema)
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    shown = {cell.strip("`").replace("[]", "").split(".")[-1] for cell in (row.split(" | ")[0][2:] for row in rows)}
    assert _schema_keys(schema) <= shown, sorted(_schema_keys(schema) - shown)
    # a few rows against the schema file as written
    by_key = {row.split(" | ")[0][2:].strip("`"): row.split(" | ") for row in rows}
    assert by_key["request_batch"][1:3] == ["integer", "`256`"]
    assert by_key["limit"][1] == "integer or null" and by_key["limit"][3] == "&gt;= 1"
    assert '`"bfloat16_if_native"`' in by_key["dtype"][3]  # $defs/model's dtype enum
    assert "rouge" in by_key["metrics.skip"][3]  # metrics.skip's families, from the metric registry
    assert "samples per batch an LLM job hands its model" in by_key["request_batch"][4]


@pytest.mark.slow
def test_docs_site_builds_strict(tmp_path):
    """`mkdocs build --strict`: a broken link, a page missing from the navigation or a warning of mkdocstrings
    fails it; the generated reference is in the site."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    reference = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "request_batch" in reference and "careqa.editions[].year" in reference
    assert (tmp_path / "site" / "api" / "index.html").read_text().count("register_backend") >= 1
