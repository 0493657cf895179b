# One model on one benchmark, in one job so the model loads once: log-likelihoods (MCQA options,
# or the reference answer for perplexity) and, for open-ended benchmarks, the generations too.


rule infer_open:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
    output:
        generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    params:
        entry=model_entry,
        overrides=lambda w: config["benchmarks"][w.benchmark],
        generation=config["generation"],
        models_dir=MODELS_DIR,
    log:
        "logs/infer_open/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/infer_open/{{model}}/{{benchmark}}.tsv"
    # the longest jobs first, so no core idles at the end waiting on one last generation
    priority: 2
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=lambda w: model_entry(w).get("mem_mb", RES.get("inference_mem_mb", 4000)),
        runtime=lambda w: model_entry(w).get("runtime", RES.get("inference_runtime", 60)),
    script:
        "../scripts/infer.py"


use rule infer_open as infer_closed with:
    output:
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    wildcard_constraints:
        benchmark=CLOSED_PATTERN,
    log:
        "logs/infer_closed/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/infer_closed/{{model}}/{{benchmark}}.tsv"
    priority: 1
