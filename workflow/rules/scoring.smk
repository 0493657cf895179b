# Per-sample metric values with a status: one job per model x benchmark (models such as the
# BERTScore encoder load once), one file per metric family of the benchmark's task. One rule per
# task type (score_open, score_mcqa, score_classification, ...), and score_lm_eval / score_lm_eval_open for
# lm-eval tasks; the generations are an input only where the benchmark generates (score_inputs, common.smk).


for _task in [*TASKS, *LM_EVAL_SCORING]:

    rule:
        name:
            f"score_{_task}"
        input:
            unpack(score_inputs),
        output:
            **{
                family: f"{RESULTS}/scores/{{model}}/{{benchmark}}/{family}.parquet"
                for family in PLAN.score_job_families(_task)
            },
        log:
            f"{LOGS}/score_{_task}/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            benchmark=TASK_PATTERNS[_task],
        conda:
            "../envs/careval.yaml"
        threads: RES["scoring_threads"]
        resources:
            mem_mb=RES["scoring_mem_mb"],
            runtime=RES["scoring_runtime"],
        params:
            body="per_model.score",
            job=lambda w, task=_task: JobParam(PLAN.score_job(w.benchmark, PLAN.score_job_families(task))),
        script:
            "../scripts/job.py"


# One metric family of one model on one benchmark: the families only some benchmarks carry (an entry's
# extra_metrics, e.g. F1-RadGraph on MIMIC-III), and under a study's variant (common.smk, `vpath`) each family
# whose files the variant's own answers or options change. The run's other families are its task's job above.
# Its `vpath`: any variant's folder, and the run's ("") only where the rest of the path (a regex lookahead) is one
# of the run's extra families' files; the run's other files are their task's job's alone, so Snakemake neither makes
# nor drops a candidate job of this rule for each (1,596 in the paper's plan).
_RUN_EXTRAS = "|".join(f"{re.escape(b)}/(?:{'|'.join(fams)})" for b, fams in PLAN.extra_scoring().items())
SCORE_FAMILY_VPATHS = "|".join([*VARIANT_FOLDERS, rf"(?=scores/[^/]+/(?:{_RUN_EXTRAS or '(?!)'})\.parquet$)"])


rule score_family:
    input:
        unpack(score_inputs),
    output:
        scores=f"{RESULTS}/{{vpath}}scores/{{model}}/{{benchmark}}/{{family}}.parquet",
    log:
        f"{LOGS}/{{vpath}}score_{{family}}/{{model}}/{{benchmark}}.log",
    wildcard_constraints:
        family="|".join(SCORED_FAMILIES),
        vpath=SCORE_FAMILY_VPATHS,
    conda:
        "../envs/careval.yaml"
    threads: RES["scoring_threads"]
    resources:
        mem_mb=RES["scoring_mem_mb"],
        runtime=RES["scoring_runtime"],
    params:
        body="per_model.score",
        job=lambda w: JobParam(at(w).score_job(w.benchmark, [w.family])),
    script:
        "../scripts/job.py"
