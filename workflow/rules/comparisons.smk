# Paired comparisons of every pair of models of each model set on every benchmark x metric (significance, effect
# size, minimum detectable difference; careval.analysis.statistics.comparisons), and the cost of every result
# (careval.analysis.cost). The report (analysis.smk) draws both.


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
        body="summary.comparisons",
        job=JobParam(PLAN.comparisons_job()),
    script:
        "../scripts/job.py"


rule cost:
    input:
        unpack(cost_inputs),
    output:
        cost=f"{RESULTS}/summary/cost.parquet",
        # the request cache's size (careval.request_cache), for the cost page
        cache=f"{RESULTS}/summary/request_cache.parquet",
    log:
        f"{LOGS}/cost.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=15,
    params:
        body="summary.cost",
        job=JobParam(PLAN.cost_job()),
        # where Snakemake writes every job's time (the rules' `benchmark:` files), and every LLM job its request
        # counts (beside its log: careval.joblog.requests_record)
        benchmarks_dir=f"{RESULTS}/benchmarks",
        logs_dir=LOGS,
    script:
        "../scripts/job.py"
