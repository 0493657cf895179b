# The Prometheus LLM judge grades an open-ended benchmark's generations, and the repeats' (rephrasings, sampled
# answers): one job per judge x model x benchmark, loading the judge once. A single judge (metrics.judge.model) is
# a jury of one whose file is the family's; a jury's judges (metrics.judge.models) each write under jury/<judge>/
# and the jury rule combines them (careval.metrics.jury) at the single judge's paths, so aggregation, resilience and
# self-consistency read judge_<rubric>@<judge> beside the jury's judge_<rubric>. The judge decides the job's
# resources. Planned only when some benchmark is judged. No science here.

if PLAN.judges:

    wildcard_constraints:
        judge="|".join(re.escape(name) for name in PLAN.judges),


if PLAN.judge is not None:

    rule judge:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=variant_answers("generations"),
            judge=lambda w: prepared_marker(judge_of(w)),
        output:
            f"{RESULTS}/{{vpath}}{JUDGE_SCORES}",
        log:
            f"{LOGS}/{{vpath}}judge/{JUDGE_LOG}{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/{{vpath}}benchmarks/judge/{JUDGE_LOG}{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["judge"]
        # on a cluster, the judge's jobs may share one SLURM job (group-components, as llm_{model})
        group:
            "llm_judge"
        conda:
            "../envs/careval-gpu.yaml"
        threads: lambda w: judge_of(w).threads
        resources:
            **llm_resources(judge_of),
        params:
            body="per_model.judge",
            # only the judge's own spec: adding or editing an evaluated model must not rerun other models' grades
            job=lambda w: JobParam(at(w).judge_job(judge=w.get("judge"))),
        script:
            "../scripts/job.py"

    # Every rephrasing (resilience) and every sampled answer (self-consistency) graded by the judge,
    # the first `limit` samples with all their repeats; resilience/consistency read these beside the text metrics.
    rule judge_repeats:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=variant_answers("generations"),
            repeats=variant_repeats,
            judge=lambda w: prepared_marker(judge_of(w)),
        output:
            f"{RESULTS}/{{vpath}}{JUDGE}{{kind}}_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/{{vpath}}judge_repeats/{JUDGE_LOG}{{kind}}/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/{{vpath}}benchmarks/judge_repeats/{JUDGE_LOG}{{kind}}/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            kind="rephrase|consistency",
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["judge_repeats"]
        group:
            "llm_judge"
        conda:
            "../envs/careval-gpu.yaml"
        threads: lambda w: judge_of(w).threads
        resources:
            **llm_resources(judge_of),
        params:
            body="per_model.judge",
            job=lambda w: JobParam(at(w).judge_job(repeats=True, judge=w.get("judge"))),
        script:
            "../scripts/job.py"


if PLAN.judges:

    # the jury's grades beside each judge's, where a single judge writes its file
    rule jury:
        input:
            [f"{RESULTS}/{{vpath}}jury/{judge}/scores/{{model}}/{{benchmark}}.parquet" for judge in PLAN.judges],
        output:
            f"{RESULTS}/{{vpath}}scores/{{model}}/{{benchmark}}/judge.parquet",
        log:
            f"{LOGS}/{{vpath}}jury/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        params:
            body="per_model.jury",
            job=lambda w: JobParam(at(w).jury_job()),
        script:
            "../scripts/job.py"

    use rule jury as jury_repeats with:
        input:
            [f"{RESULTS}/{{vpath}}jury/{judge}/{{kind}}_judge/{{model}}/{{benchmark}}.parquet" for judge in PLAN.judges],
        output:
            f"{RESULTS}/{{vpath}}{{kind}}_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/{{vpath}}jury_repeats/{{kind}}/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            kind="rephrase|consistency",
            benchmark=OPEN_PATTERN,


# The jury's agreement, bias and stability, and every metric's agreement with people (analysis.human_ratings):
# summary tables the analysis report draws. Planned under a jury or with human ratings.
if JURY_REPORT:

    rule jury_report:
        input:
            unpack(jury_report_inputs),
        output:
            **{key: f"{RESULTS}/summary/{key}.parquet" for key in JURY_REPORT_OUTPUTS},
        log:
            f"{LOGS}/jury_report.log",
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            body="summary.jury_report",
            job=JobParam(PLAN.jury_report_job()),
        script:
            "../scripts/job.py"
