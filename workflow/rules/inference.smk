# One model on one benchmark, in one job so the model loads once: log-likelihoods (options, or the
# reference answer for perplexity; none for extraction) and, for benchmarks that generate (open,
# relation extraction, generate-mode classification), the generations too. infer_open runs the
# generating benchmarks, infer_closed the log-likelihood-only ones.


rule infer_open:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
    output:
        generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    wildcard_constraints:
        benchmark=GENERATE_PATTERN,
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
    # on a cluster, the slurm profile submits up to 4 jobs of one model as one SLURM job (group-components)
    group: "llm_{model}"
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=model_resource("mem_mb", RES.get("inference_mem_mb", 4000)),
        runtime=model_resource("runtime", RES.get("inference_runtime", 60)),
        # GPUs for the model (0 on the CPU demo); the slurm profile turns it into sbatch --gpus=N
        gpu=model_resource("gpus", 0),
        # one LLM job at a time inside a grouped SLURM job (the slurm profile caps it at 1 per group)
        llm_slot=1,
    script:
        "../scripts/infer.py"


use rule infer_open as infer_closed with:
    output:
        loglik=f"{RESULTS}/loglik/{{model}}/{{benchmark}}.parquet",
    wildcard_constraints:
        benchmark=LOGLIK_PATTERN,
    log:
        "logs/infer_closed/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/infer_closed/{{model}}/{{benchmark}}.tsv"
    priority: 1
