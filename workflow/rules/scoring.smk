# Per-sample metric values with a status, one file per model x benchmark x metric family.
from careval.scoring import FAMILIES, score_inputs


rule score:
    input:
        unpack(lambda w: score_inputs(w.family, RESULTS, DATASETS_DIR, w.model, w.benchmark)),
    output:
        f"{RESULTS}/scores/{{model}}/{{benchmark}}/{{family}}.parquet",
    params:
        options=lambda w: config["metrics"].get(w.family, {}),
    wildcard_constraints:
        family="|".join(FAMILIES),
    log:
        "logs/score/{model}/{benchmark}/{family}.log",
    threads: RES.get("scoring_threads", 1)
    resources:
        mem_mb=RES.get("scoring_mem_mb", 3000),
        runtime=30,
    script:
        "../scripts/score.py"
