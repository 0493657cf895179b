# Self-consistency (paper 3.5, appendix C.2): r sampled answers per prompt from the evaluated model,
# every metric on each (the reference log-likelihoods once per repeat too), per-prompt variance and CV.


rule sample_consistency:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
        # the model's shared vLLM engine, when its entry says engine: shared (engine.smk)
        engine=engine_input,
    output:
        samples=f"{RESULTS}/consistency/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/consistency_loglik/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/sample_consistency/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/sample_consistency/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    priority: PRIORITY["sample_consistency"]
    group:
        "llm_{model}"  # with the model's other LLM jobs on a cluster (see inference.smk)
    conda:
        "../envs/careval-gpu.yaml"
    threads: llm_threads(evaluated, served=True)
    resources:
        **llm_resources(evaluated, served=True),
    params:
        body="per_model.sample_consistency",
        job=lambda w: JobParam(PLAN.consistency_job(w.model, w.benchmark)),
    script:
        "../scripts/job.py"


use rule score_rephrase as score_consistency with:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        repeats=f"{RESULTS}/consistency/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/consistency_loglik/{{model}}/{{benchmark}}.parquet",
    output:
        f"{RESULTS}/consistency_scores/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/score_consistency/{{model}}/{{benchmark}}.log",


rule consistency:
    input:
        [
            f"{RESULTS}/consistency_scores/{model}/{benchmark}.parquet"
            for model in MODELS
            for benchmark in PLAN.analysis.consistency_benchmarks
        ]
        + [
            f"{RESULTS}/consistency_judge/{model}/{benchmark}.parquet"
            for model in MODELS
            for benchmark in PLAN.analysis.consistency_benchmarks
            if PLAN.repeats_judged(benchmark)
        ],
    output:
        f"{RESULTS}/summary/consistency.parquet",
    log:
        f"{LOGS}/consistency.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        body="summary.consistency",
    script:
        "../scripts/job.py"
