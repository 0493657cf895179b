# Resilience to rephrasing (paper 3.4, appendix C.1): another LLM rephrases each answer k times,
# every text metric is recomputed on each rephrasing, and the per-sample variance is summarised.

RESILIENCE = config["analysis"]["resilience"]


def rephraser_entry():
    return config["models"][RESILIENCE["rephraser"]]


def rephraser_folder(wildcards):
    """The rephrasing model is a `models` entry: prepared by the same rule as the evaluated models."""
    name = RESILIENCE["rephraser"]
    return [f"{MODELS_DIR}/.prepared/{name}.json"] if needs_preparation(rephraser_entry()) else []


rule rephrase:
    input:
        generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
        rephraser=rephraser_folder,
    output:
        f"{RESULTS}/rephrase/{{model}}/{{benchmark}}.parquet",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    params:
        name=RESILIENCE["rephraser"],
        entry=lambda w: rephraser_entry(),
        models_dir=MODELS_DIR,
        settings=RESILIENCE,
        generation=config["generation"],
    log:
        "logs/rephrase/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/rephrase/{{model}}/{{benchmark}}.tsv"
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=model_resource("mem_mb", RES.get("inference_mem_mb", 4000), lambda w: rephraser_entry()),
        runtime=model_resource("runtime", RES.get("inference_runtime", 60), lambda w: rephraser_entry()),
        gpu=model_resource("gpus", 0, lambda w: rephraser_entry()),
    script:
        "../scripts/rephrase.py"


rule score_rephrase:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        repeats=f"{RESULTS}/rephrase/{{model}}/{{benchmark}}.parquet",
    output:
        f"{RESULTS}/rephrase_scores/{{model}}/{{benchmark}}.parquet",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    params:
        families=text_families(),
        options=config["metrics"],
    log:
        "logs/score_rephrase/{model}/{benchmark}.log",
    threads: RES.get("scoring_threads", 1)
    resources:
        mem_mb=RES.get("scoring_mem_mb", 3000),
        runtime=30,
    script:
        "../scripts/score_repeats.py"


rule resilience:
    input:
        [f"{RESULTS}/rephrase_scores/{model}/{benchmark}.parquet"
         for model in MODELS for benchmark in PLAN.resilience_benchmarks],
    output:
        f"{RESULTS}/summary/resilience.parquet",
    log:
        "logs/resilience.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/resilience.py"
