# The tidy scores table and the correlation figures.


rule aggregate_scores:
    input:
        score_files(),
    output:
        f"{RESULTS}/summary/scores.parquet",
    params:
        tasks={name: entry.task for name, entry in BENCHMARKS.items()},
    log:
        "logs/aggregate_scores.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/aggregate_scores.py"


rule correlations:
    input:
        f"{RESULTS}/summary/scores.parquet",
    output:
        pdf=f"{RESULTS}/correlations.pdf",
        table=f"{RESULTS}/summary/correlations.parquet",
        figures=directory(f"{RESULTS}/figures"),
    params:
        methods=config["analysis"]["methods"],
    log:
        "logs/correlations.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/correlations.py"
