"""careval.plugins: a config's own modules, imported by the plan and named for its jobs; a bad entry is one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from careval.config import ConfigError
from careval.plan import build_plan
from careval.plugins import ENV, load_environment_plugins, load_plugins


@pytest.fixture
def clean(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    for name in ("plugin_a", "plugin_b"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_file_plugin_runs_once_and_its_jobs_import_it_by_its_absolute_path(clean, tmp_path, monkeypatch):
    (tmp_path / "plugin_a.py").write_text(
        "import os\nos.environ['PLUGIN_A_RUNS'] = os.environ.get('PLUGIN_A_RUNS', '') + 'x'\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLUGIN_A_RUNS", raising=False)
    load_plugins(["plugin_a.py"])
    load_plugins(["plugin_a.py"])  # the plan of a study's variant: not run again
    assert os.environ["PLUGIN_A_RUNS"] == "x"
    assert os.environ[ENV] == str(tmp_path / "plugin_a.py")
    assert sys.modules["plugin_a"].__file__ == str(tmp_path / "plugin_a.py")
    # a job: a fresh interpreter elsewhere, with the run's environment
    job = "from careval.plugins import load_environment_plugins; load_environment_plugins(); import plugin_a"
    result = subprocess.run([sys.executable, "-c", job], cwd="/", env=dict(os.environ), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    load_environment_plugins()
    assert os.environ["PLUGIN_A_RUNS"] == "x"


@pytest.mark.parametrize(
    ("entry", "source", "message"),
    [
        ("missing.py", None, r"^plugins: 'missing.py' is no file \("),
        (
            "plugin_b.py",
            "raise RuntimeError('no GPU here')",
            r"^plugins: 'plugin_b.py' failed: RuntimeError: no GPU here$",
        ),
        ("no_such_module_xyz", None, r"^plugins: 'no_such_module_xyz' cannot be imported: No module named"),
    ],
)
def test_a_plugin_that_cannot_be_imported_is_one_config_error_naming_it(
    clean, tmp_path, monkeypatch, entry, source, message
):
    if source:
        (tmp_path / entry).write_text(source)
    monkeypatch.chdir(tmp_path)
    config = {"plugins": [entry], "models": {}, "benchmarks": {}}
    with pytest.raises(ConfigError, match=message):
        build_plan(config)
    assert "plugin_b" not in sys.modules and ENV not in os.environ
