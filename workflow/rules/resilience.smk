# Resilience to rephrasing (paper 3.4, appendix C.1): another LLM rephrases each answer k times,
# every text metric is recomputed on each rephrasing, and the per-sample variance is summarised.


if PLAN.rephraser is not None:

    rule rephrase:
        input:
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            rephraser=prepared_marker(PLAN.rephraser),
        output:
            f"{RESULTS}/rephrase/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/rephrase/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/rephrase/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["rephrase"]
        conda:
            "../envs/careval-gpu.yaml"
        threads: PLAN.rephraser.threads
        resources:
            **llm_resources(lambda wildcards: PLAN.rephraser),
        params:
            job=JobParam(PLAN.rephrase_job()),
        script:
            "../scripts/rephrase.py"


rule score_rephrase:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        repeats=f"{RESULTS}/rephrase/{{model}}/{{benchmark}}.parquet",
    output:
        f"{RESULTS}/rephrase_scores/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/score_rephrase/{{model}}/{{benchmark}}.log",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    conda:
        "../envs/careval.yaml"
    threads: RES["scoring_threads"]
    resources:
        mem_mb=RES["scoring_mem_mb"],
        runtime=RES["scoring_runtime"],
    params:
        job=lambda w: JobParam(PLAN.score_job(w.benchmark, PLAN.repeat_families())),
    script:
        "../scripts/score_repeats.py"


rule resilience:
    input:
        [
            f"{RESULTS}/rephrase_scores/{model}/{benchmark}.parquet"
            for model in MODELS
            for benchmark in PLAN.analysis.resilience_benchmarks
        ]
        + [
            f"{RESULTS}/rephrase_judge/{model}/{benchmark}.parquet"
            for model in MODELS
            for benchmark in PLAN.analysis.resilience_benchmarks
            if PLAN.repeats_judged(benchmark)
        ],
    output:
        f"{RESULTS}/summary/resilience.parquet",
    log:
        f"{LOGS}/resilience.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/resilience.py"
