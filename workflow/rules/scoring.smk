# Per-sample metric values with a status: one job per model x benchmark (models such as the
# BERTScore encoder load once), one file per metric family of the benchmark's task.


rule score_open:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    output:
        **{family: f"{RESULTS}/scores/{{model}}/{{benchmark}}/{family}.parquet" for family in TASK_METRICS["open"]},
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    params:
        options=config["metrics"],
    log:
        "logs/score_open/{model}/{benchmark}.log",
    threads: RES.get("scoring_threads", 1)
    resources:
        mem_mb=RES.get("scoring_mem_mb", 3000),
        runtime=30,
    script:
        "../scripts/score.py"


use rule score_open as score_closed with:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    output:
        **{family: f"{RESULTS}/scores/{{model}}/{{benchmark}}/{family}.parquet" for family in TASK_METRICS["mcqa"]},
    wildcard_constraints:
        benchmark=CLOSED_PATTERN,
    log:
        "logs/score_closed/{model}/{benchmark}.log",
