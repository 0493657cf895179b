"""The warm worker: a local run's jobs start in a fork of one process that has already imported what they
import and loaded the hf models they run.

A job of the workflow is a fresh Python process that imports torch, transformers and the metric libraries
(2-5 s) and, for an LLM job, reads its model folder and tokenizer (3-6 s), for work that takes 5-20 s on
the demo. On one machine (Snakemake's local executor) the Snakefile's `onstart` starts one warm worker
per run (server.py). It imports those libraries once; every job begins with :func:`offload` (called in one
place, careval.jobs.run, from the workflow's one script), which hands the job to the worker: the worker loads the job's hf model if it has not
yet (preload.py), forks, and the fork runs the script with the job's own `snakemake` object, working
directory, environment and standard streams, while the script's own process waits and exits with the
job's status. Forks share the worker's imported modules and model weights (copy-on-write), so 27 LLM
jobs of three models read three folders.

The job's code is the same either way: a script without a worker (a cluster job, `warm_worker: false`,
`--no-hooks`, a worker that could not start) runs as before, in its own process. What differs: the
benchmark files (`benchmark:`) of a forked job measure its waiting process, so their `s` column is the
job's wall time but their memory and CPU columns are not the job's.
"""

from .client import SOCKET_ENV, offload

__all__ = ["SOCKET_ENV", "offload"]
