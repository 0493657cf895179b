"""Every job of the workflow, in one place: each rule's script is workflow/scripts/job.py, which calls :func:`run`.

:func:`run` hands the job to the run's warm worker first (careval.warm.offload: where there is one, the job runs in
a fork of it and this process waits for its status), then runs the job's body, the function its rule names in its
`body` param ("<module>.<function>" of careval.jobs.bodies), with the job's output copied into its log
(careval.joblog.job_log). No body calls the worker, and a job without one (a cluster job, `warm_worker: false`)
runs the same body in its own process.

Standard library only at import: this runs before the body's own imports, in every job.
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any

from careval.warm import offload

BODIES = "careval.jobs.bodies"


def run(snakemake: Any, script: str) -> None:
    """The job of `snakemake` (a rule's job, as Snakemake hands it to its script `script`), in the run's warm worker
    where it has one, else here."""
    # A job a shared engine serves has threads: 0 (engine.smk), so Snakemake exports OMP_NUM_THREADS=0, which
    # OpenMP rejects (with a warning per library): it tokenises on one thread. Set before the worker takes the job's
    # environment.
    if os.environ.get("OMP_NUM_THREADS") == "0":
        os.environ["OMP_NUM_THREADS"] = "1"
    offload(snakemake, script)
    from careval.joblog import job_log
    from careval.plugins import load_environment_plugins

    load_environment_plugins()  # the config's plugins, as the plan saw them (a family, a study kind of its own)

    body = job_body(snakemake.params.body)
    with job_log(snakemake.log[0], snakemake.output):
        body(snakemake)


def job_body(name: str) -> Any:
    """The function a rule's `body` param names: "<module>.<function>" of careval.jobs.bodies."""
    module, _, function = name.rpartition(".")
    if not module:
        raise ValueError(f"a job's body {name!r}: '<module>.<function>' of {BODIES} (e.g. per_model.infer)")
    return getattr(import_module(f"{BODIES}.{module}"), function)
