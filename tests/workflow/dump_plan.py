"""Dump the jobs Snakemake plans for a config, one line each, sorted: to compare two versions of the workflow.

    python tests/workflow/dump_plan.py REPO CONFIG OUT [TARGET]

REPO is a checkout (its Snakefile; its careval is whatever this interpreter imports: set PYTHONPATH=REPO/src for
another checkout's), CONFIG a config file, OUT the file written. Each line is one job of `snakemake -n TARGET`
(every job, as with --forceall): its rule, wildcards, outputs, logs, inputs and params as Snakemake records them
(the job's spec, careval.canonical), so two versions whose dumps are equal plan the same jobs writing the same
paths with the same settings; the checkout's own folder is written <repo> (an input the config names relative to
it, e.g. analysis.elo_csv). A refactoring of the plan shows `diff` nothing.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from workflow_runs import planned_dag


def plan_lines(repo: Path, config: Path, target: str = "results/correlations.pdf") -> list[str]:
    with tempfile.TemporaryDirectory() as workdir:
        with planned_dag(repo / "Snakefile", Path(workdir), config.resolve(), target, forceall=True) as workflow:
            return sorted(
                json.dumps(
                    {
                        "rule": job.rule.name,
                        "wildcards": dict(job.wildcards),
                        "output": sorted(map(str, job.output)),
                        "log": sorted(map(str, job.log)),
                        "input": sorted(map(str, job.input)),
                        "params": workflow.persistence._params(job),
                    },
                    sort_keys=True,
                ).replace(str(repo), "<repo>")
                for job in workflow.dag.jobs
            )


if __name__ == "__main__":
    repo, config, out, *target = sys.argv[1:]
    lines = plan_lines(Path(repo).resolve(), Path(config), *target)
    Path(out).write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} jobs -> {out}")
