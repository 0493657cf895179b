# Studies (config `studies:`, careval.plan.studies): each variant's own jobs are the run's rules under the variant's
# folder (the `vpath` wildcard, common.smk); a job a variant shares with the run is the run's, whose file is read,
# never made again. Here: each study's sample table, the paired tests and the rank agreement of every study, the
# review sheet, and paper Table 6. No science here.


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
            study=study_pattern(STUDIES),
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            body="studies.study_sample_scores",
            job=lambda w: JobParam(STUDIES[w.study].table_job()),
        script:
            "../scripts/job.py"

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
            body="studies.studies_summary",
            job=JobParam(studies_job(PLAN)),
        script:
            "../scripts/job.py"

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
            body="studies.study_review_sheet",
            job=lambda w: JobParam(STUDIES[w.study].review_inputs()[1]),
        script:
            "../scripts/job.py"


if STUDY_EXAMPLES is not None:

    # --- paper Table 6: the Relaxed Cross-Entropy of a few questions, for each model and variant of the study
    rule relaxed_perplexity_examples:
        input:
            sources=examples_sources,
            model=model_folder,
        output:
            f"{RESULTS}/{{vpath}}relaxed_perplexity_examples/{{model}}.parquet",
        log:
            f"{LOGS}/{{vpath}}relaxed_perplexity_examples/{{model}}.log",
        benchmark:
            f"{RESULTS}/{{vpath}}benchmarks/relaxed_perplexity_examples/{{model}}.tsv"
        group:
            "llm_{model}"
        conda:
            "../envs/careval-gpu.yaml"
        threads: llm_threads(evaluated)
        resources:
            **llm_resources(evaluated),
        params:
            body="studies.relaxed_perplexity_examples",
            job=lambda w: JobParam(variant_study(w)[0].examples_job(variant_study(w)[1], w.model)),
        script:
            "../scripts/job.py"

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
            body="studies.table6",
            job=JobParam(STUDY_EXAMPLES.table6_job()),
        script:
            "../scripts/job.py"
