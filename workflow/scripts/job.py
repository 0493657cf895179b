"""The script of every rule: its job's body (the rule's `body` param), in the run's warm worker where it has one
(careval.jobs.run). Snakemake reruns a rule's jobs when their script is newer than their outputs: an edit here reruns
every job, so this file holds nothing but the call."""

from careval.jobs.run import run

run(snakemake, __file__)
