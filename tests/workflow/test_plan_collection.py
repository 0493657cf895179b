"""Snakemake builds the DAG with the cyclic garbage collector off and freezes the DAG's objects after
(common.smk, build_dag_without_collecting): the collector walked that growing heap over and over while freeing next
to nothing (the 5x paper config). Checked on the demo's plan, in this process: off during the build, on again after
it with the DAG frozen, and the frozen objects handed back to the collector when the planning caller is done."""

from __future__ import annotations

import gc
from pathlib import Path

import snakemake.api  # noqa: F401  (before snakemake.workflow, as Snakemake imports them)
from snakemake.workflow import Workflow
from workflow_runs import planned_dag

REPO = Path(__file__).resolve().parents[2]


def test_the_dag_is_built_without_collection_and_frozen_after(tmp_path, monkeypatch):
    seen = {}
    build = Workflow._build_dag
    if hasattr(build, "without_collecting"):  # a plan of this process hooked it already: the build it wraps
        build = build.__wrapped__

    def recording_build(self):  # the build the Snakefile's hook wraps
        seen["enabled_during"] = gc.isenabled()
        return build(self)

    monkeypatch.setattr(Workflow, "_build_dag", recording_build)
    assert gc.isenabled()
    with planned_dag(REPO / "Snakefile", tmp_path, REPO / "config" / "config.yaml", "results/correlations.pdf"):
        assert seen == {"enabled_during": False}
        assert gc.isenabled() and gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
