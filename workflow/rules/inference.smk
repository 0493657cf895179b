# One model on one benchmark: open-ended generations, and log-likelihoods (MCQA options, reference perplexity).


rule generate:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
    output:
        f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
    params:
        entry=model_entry,
        overrides=lambda w: config["benchmarks"][w.benchmark],
        generation=config["generation"],
        models_dir=MODELS_DIR,
    log:
        "logs/generate/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/generate/{{model}}/{{benchmark}}.tsv"
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=lambda w: model_entry(w).get("mem_mb", RES.get("inference_mem_mb", 4000)),
        runtime=lambda w: model_entry(w).get("runtime", RES.get("inference_runtime", 60)),
    script:
        "../scripts/generate.py"


rule loglikelihood:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
    output:
        f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    params:
        entry=model_entry,
        overrides=lambda w: config["benchmarks"][w.benchmark],
        models_dir=MODELS_DIR,
    log:
        "logs/loglikelihood/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/loglikelihood/{{model}}/{{benchmark}}.tsv"
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=lambda w: model_entry(w).get("mem_mb", RES.get("inference_mem_mb", 4000)),
        runtime=lambda w: model_entry(w).get("runtime", RES.get("inference_runtime", 60)),
    script:
        "../scripts/loglikelihood.py"
