# The Prometheus LLM judge grades an open-ended benchmark's generations: one job per model x
# benchmark, loading the judge once. The judge (metrics.judge.model: a name of `models` or an entry of
# its own) decides the job's resources. Planned only when some benchmark is judged. No science here.


if PLAN.judge is not None:

    rule judge:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            judge=prepared_marker(PLAN.judge),
        output:
            f"{RESULTS}/scores/{{model}}/{{benchmark}}/judge.parquet",
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        params:
            # only the judge's own spec: adding or editing an evaluated model must not rerun other models' grades
            spec=spec_params(PLAN.judge),
            options={k: v for k, v in config["metrics"]["judge"].items() if k not in ("benchmarks", "model")},
        log:
            f"{LOGS}/judge/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/judge/{{model}}/{{benchmark}}.tsv"
        # on a cluster, the judge's jobs may share one SLURM job (group-components, as llm_{model})
        group:
            "llm_judge"
        threads: PLAN.judge.threads
        resources:
            **llm_resources(lambda wildcards: PLAN.judge),
        script:
            "../scripts/judge.py"
