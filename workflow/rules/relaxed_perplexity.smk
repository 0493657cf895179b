# Relaxed Perplexity (paper section 4): the evaluated model itself samples continuations of the
# generation prompt and scores the benchmark's targets after them; one job per model x open-ended
# benchmark, loading the model once. Settings: config metrics.relaxed_perplexity. No science here.


rule relaxed_perplexity:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
    output:
        f"{RESULTS}/scores/{{model}}/{{benchmark}}/relaxed_perplexity.parquet",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    params:
        entry=model_entry,
        overrides=lambda w: config["benchmarks"][w.benchmark],
        models_dir=MODELS_DIR,
        options=family_options("relaxed_perplexity"),
    log:
        "logs/relaxed_perplexity/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/relaxed_perplexity/{{model}}/{{benchmark}}.tsv"
    group: "llm_{model}"  # with the model's other LLM jobs on a cluster (see inference.smk)
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=model_resource("mem_mb", RES.get("inference_mem_mb", 4000)),
        runtime=model_resource("runtime", RES.get("inference_runtime", 60)),
        gpu=model_resource("gpus", 0),
        llm_slot=1,
    script:
        "../scripts/relaxed_perplexity.py"
