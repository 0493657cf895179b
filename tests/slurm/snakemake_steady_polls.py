"""`snakemake` whose SLURM executor polls the queue at a steady interval, for the tests' runs on the test cluster.

The plugin (snakemake-executor-plugin-slurm 2.8) waits 10 s longer after every poll that finds no job finished
(hard-coded; no setting changes the step), so on the test cluster, whose jobs take seconds, a job was seen done
tens of seconds late at every level of the DAG (polls at 2, 14, 36, 68 s). Here the wait stays at the profile's
`slurm-init-seconds-before-status-checks` (the test sets 2 s); the profile, the commands and the jobs are unchanged.
Usage: python snakemake_steady_polls.py <snakemake's arguments>.
"""

import sys

from snakemake.cli import main
from snakemake_executor_plugin_slurm import Executor


def _steady(executor: Executor, seconds: float) -> None:
    settings = executor.workflow.executor_settings
    executor._next_seconds_between_status_checks = min(seconds, settings.init_seconds_before_status_checks)


Executor.next_seconds_between_status_checks = Executor.next_seconds_between_status_checks.setter(_steady)

if __name__ == "__main__":
    sys.exit(main())
