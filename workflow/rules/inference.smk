# One model on one benchmark, in one job so the model loads once: log-likelihoods (options, or the
# reference answer for perplexity; none for extraction) and, for benchmarks that generate (open,
# relation extraction, generate-mode classification), the generations too. infer_open runs the
# generating benchmarks, infer_closed the log-likelihood-only ones. Under a study's variant (the `vpath` wildcard:
# results/studies/<study>/<variant>/, common.smk) the same jobs run with the variant's plan.


rule infer_open:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
        # the model's shared vLLM engine, when its entry says engine: shared (engine.smk)
        engine=engine_input,
    output:
        generations=f"{RESULTS}/{{vpath}}generations/{{model}}/{{benchmark}}.parquet",
        loglik=f"{RESULTS}/{{vpath}}loglik/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/{{vpath}}infer_open/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/{{vpath}}benchmarks/infer_open/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        benchmark=GENERATE_PATTERN,
    priority: PRIORITY["infer_open"]
    # on a cluster, the slurm profile submits up to 4 jobs of one model as one SLURM job (group-components)
    group:
        "llm_{model}"
    conda:
        "../envs/careval-gpu.yaml"
    threads: llm_threads(evaluated, served=True)
    resources:
        **llm_resources(evaluated, served=True),
    params:
        body="per_model.infer",
        job=lambda w: JobParam(at(w).infer_job(w.model, w.benchmark)),
    script:
        "../scripts/job.py"


use rule infer_open as infer_closed with:
    output:
        loglik=f"{RESULTS}/{{vpath}}loglik/{{model}}/{{benchmark}}.parquet",
    log:
        f"{LOGS}/{{vpath}}infer_closed/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/{{vpath}}benchmarks/infer_closed/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        benchmark=LOGLIK_PATTERN,
    priority: PRIORITY["infer_closed"]
