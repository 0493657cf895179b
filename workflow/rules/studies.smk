# Studies (config `studies:`, careval.studies): each variant's own jobs are the run's rules over the variant's plan,
# writing under results/studies/<study>/<variant>/ (run<r>/ for a study with runs); a job a variant shares with the
# run is the run's, whose file is read, never made again. Then each study's sample table, the paired tests and the
# rank agreement of every study, and paper Table 6. Their input functions: common.smk. No science here.


if STUDIES:

    # --- a model's jobs under a variant (sections model, models, benchmark, generation)
    use rule infer_open as study_infer_open with:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            model=study_model_folder,
        output:
            generations=f"{STUDY}/generations/{{model}}/{{benchmark}}.parquet",
            loglik=f"{STUDY}/loglik/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/infer_open/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY}/benchmarks/infer_open/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=GENERATE_PATTERN,
        threads: llm_threads(study_model)
        resources:
            **llm_resources(study_model),
        params:
            job=lambda w: JobParam(study_plan(w).infer_job(w.model, w.benchmark)),

    use rule study_infer_open as study_infer_closed with:
        output:
            loglik=f"{STUDY}/loglik/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/infer_closed/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY}/benchmarks/infer_closed/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=LOGLIK_PATTERN,

    use rule relaxed_perplexity as study_relaxed_perplexity with:
        input:
            samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
            model=study_model_folder,
        output:
            f"{STUDY}/scores/{{model}}/{{benchmark}}/relaxed_perplexity.parquet",
            targets=f"{STUDY}/relaxed_perplexity_targets/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/relaxed_perplexity/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY}/benchmarks/relaxed_perplexity/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        threads: llm_threads(study_model)
        resources:
            **llm_resources(study_model),
        params:
            job=lambda w: JobParam(study_plan(w).relaxed_perplexity_job(w.model, w.benchmark)),

    # --- a metric family on a variant's answers (or on the run's, for a study of metrics.<family>), one job each
    for _family in STUDY_SCORE_FAMILIES:

        rule:
            name:
                f"study_score_{_family}"
            input:
                unpack(study_answers),
            output:
                **{_family: f"{STUDY}/scores/{{model}}/{{benchmark}}/{_family}.parquet"},
            log:
                f"{STUDY_LOGS}/score_{_family}/{{model}}/{{benchmark}}.log",
            wildcard_constraints:
                **STUDY_WILDCARDS,
            conda:
                "../envs/careval.yaml"
            threads: RES["scoring_threads"]
            resources:
                mem_mb=RES["scoring_mem_mb"],
                runtime=RES["scoring_runtime"],
            params:
                job=lambda w, family=_family: JobParam(study_plan(w).score_job(w.benchmark, [family])),
            script:
                "../scripts/score.py"


if STUDIES and PLAN.judge is not None and not PLAN.judges:

    use rule judge as study_judge with:
        input:
            unpack(study_answers),
            judge=prepared_marker(PLAN.judge),
        output:
            f"{STUDY}/scores/{{model}}/{{benchmark}}/judge.parquet",
        log:
            f"{STUDY_LOGS}/judge/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY}/benchmarks/judge/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).judge_job()),

    use rule judge_repeats as study_judge_repeats with:
        input:
            unpack(study_rephrasings),
            judge=prepared_marker(PLAN.judge),
        output:
            f"{STUDY_RUN}/rephrase_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/run{{run}}/judge_repeats/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY_RUN}/benchmarks/judge_repeats/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).judge_job(repeats=True)),


if STUDIES and PLAN.judges:

    use rule judge_member as study_judge_member with:
        input:
            unpack(study_answers),
            judge=lambda w: prepared_marker(PLAN.judges[w.judge]),
        output:
            f"{STUDY}/jury/{{judge}}/scores/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/judge/{{judge}}/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY}/benchmarks/judge/{{judge}}/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).judge_job(judge=w.judge)),

    use rule jury as study_jury with:
        input:
            [f"{STUDY}/jury/{judge}/scores/{{model}}/{{benchmark}}.parquet" for judge in PLAN.judges],
        output:
            f"{STUDY}/scores/{{model}}/{{benchmark}}/judge.parquet",
        log:
            f"{STUDY_LOGS}/jury/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).jury_job()),

    use rule judge_member_repeats as study_judge_member_repeats with:
        input:
            unpack(study_rephrasings),
            judge=lambda w: prepared_marker(PLAN.judges[w.judge]),
        output:
            f"{STUDY_RUN}/jury/{{judge}}/rephrase_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/run{{run}}/judge_repeats/{{judge}}/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY_RUN}/benchmarks/judge_repeats/{{judge}}/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).judge_job(repeats=True, judge=w.judge)),

    use rule jury as study_jury_repeats with:
        input:
            [f"{STUDY_RUN}/jury/{judge}/rephrase_judge/{{model}}/{{benchmark}}.parquet" for judge in PLAN.judges],
        output:
            f"{STUDY_RUN}/rephrase_judge/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/run{{run}}/jury_repeats/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).jury_job()),


if STUDIES and PLAN.rephraser is not None:

    # --- the rephrasings of one run of a variant (section analysis.resilience)
    use rule rephrase as study_rephrase with:
        input:
            generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
            rephraser=lambda w: prepared_marker(study_plan(w).rephraser),
        output:
            f"{STUDY_RUN}/rephrase/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/run{{run}}/rephrase/{{model}}/{{benchmark}}.log",
        benchmark:
            f"{STUDY_RUN}/benchmarks/rephrase/{{model}}/{{benchmark}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        threads: lambda w: study_plan(w).rephraser.threads
        resources:
            **llm_resources(lambda w: study_plan(w).rephraser),
        params:
            job=lambda w: JobParam(study_plan(w).rephrase_job()),

    use rule score_rephrase as study_score_rephrase with:
        input:
            unpack(study_rephrasings),
        output:
            f"{STUDY_RUN}/rephrase_scores/{{model}}/{{benchmark}}.parquet",
        log:
            f"{STUDY_LOGS}/run{{run}}/score_rephrase/{{model}}/{{benchmark}}.log",
        wildcard_constraints:
            **STUDY_WILDCARDS,
            benchmark=OPEN_PATTERN,
        params:
            job=lambda w: JobParam(study_plan(w).score_job(w.benchmark, study_plan(w).repeat_families())),


if STUDIES:

    # --- each study's per-sample table, then the paired tests and rank agreement of every study
    rule study_sample_scores:
        input:
            study_sources,
        output:
            f"{RESULTS}/studies/{{study}}/sample_scores.parquet",
        log:
            f"{LOGS}/studies/{{study}}/sample_scores.log",
        wildcard_constraints:
            study=STUDY_WILDCARDS["study"],
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            job=lambda w: JobParam(STUDIES[w.study].table_job()),
        script:
            "../scripts/study_sample_scores.py"

    rule studies_summary:
        input:
            tables=[f"{RESULTS}/studies/{study}/sample_scores.parquet" for study in STUDIES],
            # the run's per-sample table: the models a study leaves alone rank beside the study's models
            samples=f"{RESULTS}/summary/sample_scores.parquet",
        output:
            f"{RESULTS}/summary/studies.parquet",
        log:
            f"{LOGS}/studies_summary.log",
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            job=JobParam(studies_job(PLAN)),
        script:
            "../scripts/studies_summary.py"

    # --- the blind review sheet of a study of rephrasers (appendix C.1's manual inspection)
    rule study_review_sheet:
        input:
            lambda w: STUDIES[w.study].review_inputs()[0],
        output:
            sheet=f"{RESULTS}/studies/{{study}}/review_sheet.csv",
            key=f"{RESULTS}/studies/{{study}}/review_key.csv",
        log:
            f"{LOGS}/studies/{{study}}/review_sheet.log",
        wildcard_constraints:
            study=study_pattern(s for s, study in STUDIES.items() if study.has_review_sheet),
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        params:
            job=lambda w: JobParam(STUDIES[w.study].review_inputs()[1]),
        script:
            "../scripts/study_review_sheet.py"


if STUDY_EXAMPLES is not None:

    # --- paper Table 6: the Relaxed Cross-Entropy of a few questions, for each model and variant of the study
    rule relaxed_perplexity_examples:
        input:
            sources=study_examples,
            model=study_model_folder,
        output:
            f"{STUDY}/relaxed_perplexity_examples/{{model}}.parquet",
        log:
            f"{STUDY_LOGS}/relaxed_perplexity_examples/{{model}}.log",
        benchmark:
            f"{STUDY}/benchmarks/relaxed_perplexity_examples/{{model}}.tsv"
        wildcard_constraints:
            **STUDY_WILDCARDS,
        group:
            "llm_{model}"
        conda:
            "../envs/careval-gpu.yaml"
        threads: llm_threads(study_model)
        resources:
            **llm_resources(study_model),
        params:
            job=lambda w: JobParam(STUDIES[w.study].examples_job(w.variant, w.model)),
        script:
            "../scripts/relaxed_perplexity_examples.py"

    rule table6:
        input:
            [path for _, _, path in STUDY_EXAMPLES.examples_files()],
        output:
            **{ext: f"{RESULTS}/tables/table6_relaxed_perplexity_examples.{ext}" for ext in ("csv", "md", "tex")},
        log:
            f"{LOGS}/table6.log",
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        params:
            job=JobParam(STUDY_EXAMPLES.table6_job()),
        script:
            "../scripts/table6.py"
