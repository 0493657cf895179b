# Benchmarks are read from their source and normalised to the canonical sample schema.


rule normalise_benchmark:
    input:
        benchmark_source_files,
    output:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        # rows read, selected and skipped (on_bad_row: skip): the summary's n_skipped
        report=f"{DATASETS_DIR}/{{benchmark}}.json",
    log:
        f"{LOGS}/normalise_benchmark/{{benchmark}}.log",
    priority: PRIORITY["normalise_benchmark"]
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        body="per_model.normalise_benchmark",
        job=lambda w: JobParam(PLAN.normalise_job(w.benchmark)),
    script:
        "../scripts/job.py"
