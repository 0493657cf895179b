# An LLM-run metric family computed by its registry entry's runner (careval.metrics.registry `runner`: a plugin's,
# careval.plugins): the evaluated model computes it on one benchmark in a job of its own, loading the model once.
# The judge and Relaxed Perplexity have rules of their own (judge.smk, relaxed_perplexity.smk). No science here.


rule llm_family:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        model=model_folder,
        # the model's shared vLLM engine, when its entry says engine: shared (engine.smk)
        engine=engine_input,
    output:
        f"{RESULTS}/{{vpath}}scores/{{model}}/{{benchmark}}/{{family}}.parquet",
    log:
        f"{LOGS}/{{vpath}}llm_family/{{family}}/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/{{vpath}}benchmarks/llm_family/{{family}}/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        family="|".join(RUNNER_FAMILIES),
    priority: PRIORITY["relaxed_perplexity"]
    group:
        "llm_{model}"  # with the model's other LLM jobs on a cluster (see inference.smk)
    conda:
        "../envs/careval-gpu.yaml"
    threads: llm_threads(evaluated, served=True)
    resources:
        **llm_resources(evaluated, served=True),
    params:
        body="per_model.llm_family",
        job=lambda w: JobParam(at(w).family_job(w.model, w.benchmark, w.family)),
    script:
        "../scripts/job.py"
