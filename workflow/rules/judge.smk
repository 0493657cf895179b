# The Prometheus LLM judge grades an open-ended benchmark's generations: one job per model x
# benchmark, loading the judge once. The judge (metrics.judge.model: a name of `models` or an entry of
# its own) decides the job's resources. Planned only when some benchmark is judged. No science here.


if PLAN.judge is not None and not PLAN.judges:

    rule judge:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            judge=prepared_marker(PLAN.judge),
        output:
            f"{RESULTS}/scores/{{model}}/{{benchmark}}/judge.parquet",
        log:
            f"{LOGS}/judge/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/judge/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["judge"]
        # on a cluster, the judge's jobs may share one SLURM job (group-components, as llm_{model})
        group:
            "llm_judge"
        conda:
            "../envs/careval-gpu.yaml"
        threads: PLAN.judge.threads
        resources:
            **llm_resources(lambda wildcards: PLAN.judge),
        params:
            # only the judge's own spec: adding or editing an evaluated model must not rerun other models' grades
            job=JobParam(PLAN.judge_job()),
        script:
            "../scripts/judge.py"


if PLAN.judge is not None and not PLAN.judges:

    # Every rephrasing (resilience) and every sampled answer (self-consistency) graded by the judge,
    # the first `limit` samples with all their repeats; resilience/consistency read these beside the text metrics.
    rule judge_repeats:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            repeats=f"{RESULTS}/{{kind}}/{{model}}/{{benchmark}}.parquet",
            judge=prepared_marker(PLAN.judge),
        output:
            f"{RESULTS}/{{kind}}_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/judge_repeats/{{kind}}/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/judge_repeats/{{kind}}/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            kind="rephrase|consistency",
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["judge_repeats"]
        group:
            "llm_judge"
        conda:
            "../envs/careval-gpu.yaml"
        threads: PLAN.judge.threads
        resources:
            **llm_resources(lambda wildcards: PLAN.judge),
        params:
            job=JobParam(PLAN.judge_job(repeats=True)),
        script:
            "../scripts/judge_repeats.py"
