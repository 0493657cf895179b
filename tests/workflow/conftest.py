"""The workflow tests' shared run (workflow_runs.run_two_models): built once by the worker that runs the files of
the xdist group TWO_MODEL_GROUP (test_reruns.py copies and changes it; test_warm_worker_run.py compares it with a
run without the warm worker)."""

from __future__ import annotations

import pytest
from workflow_runs import FinishedRun, run_two_models


@pytest.fixture(scope="session")
def two_model_run(repo_root, tmp_path_factory, demo_model_dirs) -> FinishedRun:
    """The two-model run with the warm worker (the local default); never changed in place."""
    return run_two_models(repo_root, tmp_path_factory.mktemp("two-models"), warm=True)
