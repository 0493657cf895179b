# Paired comparisons of every pair of models of each model set on every benchmark x metric (significance, effect
# size, minimum detectable difference; careval.analysis.comparisons), and the cost of every result
# (careval.analysis.cost). The report (analysis.smk) draws both.


def comparison_repeats(wildcards):
    """The scored sampled answers of the self-consistency analysis, where the two-level bootstrap reads them."""
    if not PLAN.comparisons_job().two_level:
        return []
    benchmarks = PLAN.analysis.consistency_benchmarks
    return [f"{RESULTS}/consistency_scores/{m}/{b}.parquet" for m in MODELS for b in benchmarks] + [
        f"{RESULTS}/consistency_judge/{m}/{b}.parquet" for m in MODELS for b in benchmarks if repeats_judged(b)
    ]


rule comparisons:
    input:
        samples=f"{RESULTS}/summary/sample_scores.parquet",
        # the self-consistency scores: the two-level bootstrap's sampled answers (analysis.comparisons.two_level)
        repeats=comparison_repeats,
        # corpus sacreBLEU is recomputed on resampled corpora from the generations and references
        datasets=[f"{DATASETS_DIR}/{b}.parquet" for b in PLAN.comparisons_job().corpus_bleu],
        generations=[
            f"{RESULTS}/generations/{m}/{b}.parquet" for m in MODELS for b in PLAN.comparisons_job().corpus_bleu
        ],
    output:
        f"{RESULTS}/summary/comparisons.parquet",
    log:
        f"{LOGS}/comparisons.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        job=JobParam(PLAN.comparisons_job()),
    script:
        "../scripts/comparisons.py"


def cost_inputs(wildcards):
    """Every inference output (whose tokens are counted) and the analysis tables, after whose jobs every job time
    under results/benchmarks is written."""
    inputs = {k: v for k, v in analysis_inputs(wildcards).items() if k not in ("elo", "comparisons", "cost")}
    for model in MODELS:
        for benchmark, entry in BENCHMARKS.items():
            inputs[f"loglik/{model}/{benchmark}"] = f"{RESULTS}/loglik/{model}/{benchmark}.parquet"
            if entry.generates:
                inputs[f"generations/{model}/{benchmark}"] = f"{RESULTS}/generations/{model}/{benchmark}.parquet"
    return inputs


rule cost:
    input:
        unpack(cost_inputs),
    output:
        f"{RESULTS}/summary/cost.parquet",
    log:
        f"{LOGS}/cost.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=15,
    params:
        job=JobParam(PLAN.cost_job()),
        # where Snakemake writes every job's time (the rules' `benchmark:` files)
        benchmarks_dir=f"{RESULTS}/benchmarks",
    script:
        "../scripts/cost.py"
