# Resilience to rephrasing (paper 3.4, appendix C.1): another LLM rephrases each answer k times,
# every text metric is recomputed on each rephrasing, and the per-sample variance is summarised.


if PLAN.rephraser is not None:

    rule rephrase:
        input:
            generations=variant_answers("generations"),
            rephraser=lambda w: prepared_marker(at(w).rephraser),
        output:
            f"{RESULTS}/{{vpath}}rephrase/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/{{vpath}}rephrase/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/{{vpath}}benchmarks/rephrase/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["rephrase"]
        conda:
            "../envs/careval-gpu.yaml"
        threads: lambda w: at(w).rephraser.threads
        resources:
            **llm_resources(lambda w: at(w).rephraser),
        params:
            body="per_model.rephrase",
            job=lambda w: JobParam(at(w).rephrase_job()),
        script:
            "../scripts/job.py"


rule score_rephrase:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        repeats=lambda w: PLAN.repeats_file(w.vpath, "rephrase", w.model, w.benchmark),
    output:
        f"{RESULTS}/{{vpath}}rephrase_scores/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/{{vpath}}score_rephrase/{{model}}/{{benchmark}}.log",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    conda:
        "../envs/careval.yaml"
    threads: RES["scoring_threads"]
    resources:
        mem_mb=RES["scoring_mem_mb"],
        runtime=RES["scoring_runtime"],
    params:
        body="per_model.score_repeats",
        job=lambda w: JobParam(at(w).score_job(w.benchmark, at(w).repeat_families())),
    script:
        "../scripts/job.py"


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
    params:
        body="summary.resilience",
    script:
        "../scripts/job.py"
