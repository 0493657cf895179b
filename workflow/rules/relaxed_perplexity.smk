# Relaxed Perplexity (paper section 4): the evaluated model itself samples continuations of the
# generation prompt and scores the benchmark's targets after them; one job per model x open-ended
# benchmark, loading the model once. Settings: config metrics.relaxed_perplexity. No science here.


rule relaxed_perplexity:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
        # the model's shared vLLM engine, when its entry says engine: shared (engine.smk)
        engine=engine_input,
    output:
        f"{RESULTS}/{{vpath}}scores/{{model}}/{{benchmark}}/relaxed_perplexity.parquet",
        # every target's value (OLAPH: each Must_have and Nice_to_have statement), beside the per-sample scores
        targets=f"{RESULTS}/{{vpath}}relaxed_perplexity_targets/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/{{vpath}}relaxed_perplexity/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/{{vpath}}benchmarks/relaxed_perplexity/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    priority: PRIORITY["relaxed_perplexity"]
    group:
        "llm_{model}"  # with the model's other LLM jobs on a cluster (see inference.smk)
    conda:
        "../envs/careval-gpu.yaml"
    threads: llm_threads(evaluated, served=True)
    resources:
        **llm_resources(evaluated, served=True),
    params:
        body="per_model.relaxed_perplexity",
        job=lambda w: JobParam(at(w).relaxed_perplexity_job(w.model, w.benchmark)),
    script:
        "../scripts/job.py"
