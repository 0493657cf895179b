"""Fixtures for the reliability tests: the analysis tests' tiny random-weight Llama behind the real HF backend."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _analysis_fixtures():
    path = Path(__file__).resolve().parents[1] / "analysis" / "conftest.py"
    spec = importlib.util.spec_from_file_location("careval_analysis_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_fixtures = _analysis_fixtures()
tiny_llama_dir = _fixtures.tiny_llama_dir
tiny_spec = _fixtures.tiny_spec
