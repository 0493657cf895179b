"""Jobs: one workflow job each, file in, file out; `run` is every job's entry (the warm worker, then its body) and
`bodies` each rule's body (snakemake.* -> one call of these and the other stages' functions)."""
