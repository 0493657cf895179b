# A jury of judges (metrics.judge.models): each judge grades one model's answers, and their repeats, in jobs of
# its own (the judge rule's job, loading only that judge); the jury's files are then combined from the judges'
# (careval.metrics.jury) at the paths a single judge writes, so aggregation, resilience and self-consistency read
# judge_<rubric>@<judge> beside the jury's judge_<rubric>. Planned only under a jury. No science here.


from careval.specs import JURY_REPORT_TABLES

# Planned under a jury (metrics.judge.models) or where people's ratings are given (analysis.human_ratings).
JURY_REPORT = bool(PLAN.judges) or ANALYSIS["human_ratings"] is not None
JURY_REPORT_OUTPUTS = JURY_REPORT_TABLES


if PLAN.judges:

    wildcard_constraints:
        judge="|".join(re.escape(name) for name in PLAN.judges),

    rule judge_member:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            judge=lambda w: prepared_marker(PLAN.judges[w.judge]),
        output:
            f"{RESULTS}/jury/{{judge}}/scores/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/judge/{{judge}}/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/judge/{{judge}}/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["judge"]
        group:
            "llm_judge"
        conda:
            "../envs/careval-gpu.yaml"
        threads: lambda w: PLAN.judges[w.judge].threads
        resources:
            **llm_resources(lambda wildcards: PLAN.judges[wildcards.judge]),
        params:
            job=lambda w: JobParam(PLAN.judge_job(judge=w.judge)),
        script:
            "../scripts/judge.py"

    rule judge_member_repeats:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            repeats=f"{RESULTS}/{{kind}}/{{model}}/{{benchmark}}.parquet",
            judge=lambda w: prepared_marker(PLAN.judges[w.judge]),
        output:
            f"{RESULTS}/jury/{{judge}}/{{kind}}_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/judge_repeats/{{judge}}/{{kind}}/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/judge_repeats/{{judge}}/{{kind}}/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            kind="rephrase|consistency",
            benchmark=OPEN_PATTERN,
        priority: PRIORITY["judge_repeats"]
        group:
            "llm_judge"
        conda:
            "../envs/careval-gpu.yaml"
        threads: lambda w: PLAN.judges[w.judge].threads
        resources:
            **llm_resources(lambda wildcards: PLAN.judges[wildcards.judge]),
        params:
            job=lambda w: JobParam(PLAN.judge_job(repeats=True, judge=w.judge)),
        script:
            "../scripts/judge_repeats.py"

    # the jury's grades beside each judge's, where a single judge writes its file
    rule jury:
        input:
            [f"{RESULTS}/jury/{judge}/scores/{{model}}/{{benchmark}}.parquet" for judge in PLAN.judges],
        output:
            f"{RESULTS}/scores/{{model}}/{{benchmark}}/judge.parquet",
        log:
            f"{LOGS}/jury/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            benchmark=OPEN_PATTERN,
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        params:
            job=JobParam(PLAN.jury_job()),
        script:
            "../scripts/jury.py"

    use rule jury as jury_repeats with:
        input:
            [f"{RESULTS}/jury/{judge}/{{kind}}_judge/{{model}}/{{benchmark}}.parquet" for judge in PLAN.judges],
        output:
            f"{RESULTS}/{{kind}}_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{LOGS}/jury_repeats/{{kind}}/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            kind="rephrase|consistency",
            benchmark=OPEN_PATTERN,
        conda:
            "../envs/careval.yaml"


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
            job=JobParam(PLAN.jury_report_job()),
        script:
            "../scripts/jury_report.py"
