"""The bodies of the workflow's jobs, one function each, named by their rule's `body` param (careval.jobs.run)."""
