# Per-sample metric values with a status: one job per model x benchmark (models such as the
# BERTScore encoder load once), one file per metric family.
from careval.datasets.registry import MCQA_METRICS, OPEN_METRICS


rule score_open:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    output:
        **{family: f"{RESULTS}/scores/{{model}}/{{benchmark}}/{family}.parquet" for family in OPEN_METRICS},
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


rule score_closed:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    output:
        **{family: f"{RESULTS}/scores/{{model}}/{{benchmark}}/{family}.parquet" for family in MCQA_METRICS},
    wildcard_constraints:
        benchmark=CLOSED_PATTERN,
    params:
        options=config["metrics"],
    log:
        "logs/score_closed/{model}/{benchmark}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/score.py"
