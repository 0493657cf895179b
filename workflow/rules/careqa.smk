# The CareQA build (paper section 2.1, appendix A), on demand: `snakemake --cores 2 careqa`.
# Not an input of `all`: it needs the MIR exams (or the demo exam) and an LLM translator/rephraser.
# acquire -> parse (CareQA_es) -> translate (CareQA_en) -> negative filter
# -> iteration 1: two rephrasings + selection (careqa_rephrase), unique-answer validation (careqa_validate)
# -> iteration 2: the pairs iteration 1's validator did not accept, rephrased again for a single valid answer
#    (careqa_rephrase_iteration2), the same validation (careqa_validate)
# -> CareQA_en_open: the validated pairs of both iterations (careqa_open); stage_counts.json (per-iteration
#    input, rephrased, selected, validated, rejected, final); human-review sheets and agreement.
# Its input functions: common.smk.
import glob

from careval.careqa.build import STAGES as CAREQA_STAGES

CAREQA_DIR = f"{RESULTS}/careqa"
CAREQA_REPORTS = [f"{CAREQA_DIR}/reports/{stage}.json" for stage in CAREQA_STAGES]
CAREQA_ITERATIONS = (1, 2)
# the filled review sheets' folder; unset, the agreement's missing input says which setting names it
CAREQA_FILLED_SHEETS = CAREQA["review"]["filled_sheets"] or "<careqa.review.filled_sheets: not set>"


wildcard_constraints:
    edition="|".join(re.escape(e) for e in CAREQA_EDITIONS) or "(?!)",
    review_kind="translation|rephrasing",
    iteration="1|2",


rule careqa:
    input:
        f"{CAREQA_DIR}/CareQA_es.parquet",
        f"{CAREQA_DIR}/CareQA_en.parquet",
        f"{CAREQA_DIR}/CareQA_en_open.parquet",
        f"{CAREQA_DIR}/stage_counts.json",
        expand(f"{CAREQA_DIR}/review/{{kind}}/sheet.csv", kind=["translation", "rephrasing"]),


rule careqa_acquire:
    input:
        careqa_local_documents,
    output:
        booklet=f"{CAREQA_DIR}/raw/{{edition}}/booklet",
        key=f"{CAREQA_DIR}/raw/{{edition}}/answer_key",
    log:
        f"{LOGS}/careqa/acquire/{{edition}}.log",
    conda:
        "../envs/careval.yaml"
    resources:
        runtime=30,
    params:
        body="careqa.acquire",
        job=lambda w: JobParam(PLAN.careqa_editions_job([CAREQA_EDITIONS[w.edition]])),
    script:
        "../scripts/job.py"


rule careqa_parse:
    input:
        booklets=[f"{CAREQA_DIR}/raw/{name}/booklet" for name in CAREQA_EDITIONS],
        answer_keys=[f"{CAREQA_DIR}/raw/{name}/answer_key" for name in CAREQA_EDITIONS],
    output:
        spanish=f"{CAREQA_DIR}/CareQA_es.parquet",
        report=f"{CAREQA_DIR}/reports/parse.json",
    log:
        f"{LOGS}/careqa/parse.log",
    conda:
        "../envs/careval.yaml"
    params:
        body="careqa.parse",
        job=JobParam(PLAN.careqa_editions_job()),
    script:
        "../scripts/job.py"


rule careqa_translate:
    input:
        spanish=f"{CAREQA_DIR}/CareQA_es.parquet",
        model=careqa_model_folder("translator"),
    output:
        english=f"{CAREQA_DIR}/CareQA_en.parquet",
        audit=f"{CAREQA_DIR}/audit/translations.parquet",
        report=f"{CAREQA_DIR}/reports/translate.json",
    log:
        f"{LOGS}/careqa/translate.log",
    conda:
        "../envs/careval-gpu.yaml"
    threads: lambda w: careqa_llm("translator").threads
    resources:
        **llm_resources(lambda w: careqa_llm("translator")),
    params:
        body="careqa.translate",
        job=lambda w: JobParam(careqa_llm_job("translator")),
    script:
        "../scripts/job.py"


rule careqa_filter_negative:
    input:
        english=f"{CAREQA_DIR}/CareQA_en.parquet",
        spanish=f"{CAREQA_DIR}/CareQA_es.parquet",
    output:
        screened=f"{CAREQA_DIR}/audit/negative_filter.parquet",
        report=f"{CAREQA_DIR}/reports/negative_filter.json",
    log:
        f"{LOGS}/careqa/filter_negative.log",
    conda:
        "../envs/careval.yaml"
    params:
        body="careqa.filter_negative",
    script:
        "../scripts/job.py"


rule careqa_rephrase:
    input:
        english=f"{CAREQA_DIR}/CareQA_en.parquet",
        screened=f"{CAREQA_DIR}/audit/negative_filter.parquet",
        model=careqa_model_folder("rephraser"),
    output:
        audit=f"{CAREQA_DIR}/audit/rephrasings_iteration1.parquet",
        report=f"{CAREQA_DIR}/reports/rephrase_iteration1.json",
    log:
        f"{LOGS}/careqa/rephrase_iteration1.log",
    conda:
        "../envs/careval-gpu.yaml"
    threads: lambda w: careqa_llm("rephraser").threads
    resources:
        **llm_resources(lambda w: careqa_llm("rephraser")),
    params:
        body="careqa.rephrase",
        job=lambda w: JobParam(careqa_llm_job("rephraser")),
    script:
        "../scripts/job.py"


rule careqa_validate:
    input:
        candidates=f"{CAREQA_DIR}/audit/rephrasings_iteration{{iteration}}.parquet",
        model=careqa_model_folder("rephraser"),
    output:
        audit=f"{CAREQA_DIR}/audit/validation_iteration{{iteration}}.parquet",
        report=f"{CAREQA_DIR}/reports/validate_iteration{{iteration}}.json",
    log:
        f"{LOGS}/careqa/validate_iteration{{iteration}}.log",
    conda:
        "../envs/careval-gpu.yaml"
    threads: lambda w: careqa_llm("rephraser").threads
    resources:
        **llm_resources(lambda w: careqa_llm("rephraser")),
    params:
        body="careqa.validate",
        job=lambda w: JobParam(careqa_llm_job("rephraser")),
    script:
        "../scripts/job.py"


rule careqa_rephrase_iteration2:
    input:
        english=f"{CAREQA_DIR}/CareQA_en.parquet",
        validation=f"{CAREQA_DIR}/audit/validation_iteration1.parquet",
        model=careqa_model_folder("rephraser"),
    output:
        audit=f"{CAREQA_DIR}/audit/rephrasings_iteration2.parquet",
        report=f"{CAREQA_DIR}/reports/rephrase_iteration2.json",
    log:
        f"{LOGS}/careqa/rephrase_iteration2.log",
    conda:
        "../envs/careval-gpu.yaml"
    threads: lambda w: careqa_llm("rephraser").threads
    resources:
        **llm_resources(lambda w: careqa_llm("rephraser")),
    params:
        body="careqa.rephrase_iteration2",
        job=lambda w: JobParam(careqa_llm_job("rephraser")),
    script:
        "../scripts/job.py"


rule careqa_open:
    input:
        english=f"{CAREQA_DIR}/CareQA_en.parquet",
        validation=[f"{CAREQA_DIR}/audit/validation_iteration{n}.parquet" for n in CAREQA_ITERATIONS],
    output:
        open=f"{CAREQA_DIR}/CareQA_en_open.parquet",
        report=f"{CAREQA_DIR}/reports/open.json",
    log:
        f"{LOGS}/careqa/open.log",
    conda:
        "../envs/careval.yaml"
    params:
        body="careqa.open",
    script:
        "../scripts/job.py"


rule careqa_stage_counts:
    input:
        CAREQA_REPORTS,
    output:
        f"{CAREQA_DIR}/stage_counts.json",
    log:
        f"{LOGS}/careqa/stage_counts.log",
    conda:
        "../envs/careval.yaml"
    params:
        body="careqa.stage_counts",
    script:
        "../scripts/job.py"


rule careqa_review_sheet:
    input:
        english=f"{CAREQA_DIR}/CareQA_en.parquet",
        spanish=f"{CAREQA_DIR}/CareQA_es.parquet",
        open=f"{CAREQA_DIR}/CareQA_en_open.parquet",
    output:
        sheet=f"{CAREQA_DIR}/review/{{review_kind}}/sheet.csv",
        summary=f"{CAREQA_DIR}/review/{{review_kind}}/sample.json",
    log:
        f"{LOGS}/careqa/review_sheet/{{review_kind}}.log",
    conda:
        "../envs/careval.yaml"
    params:
        body="careqa.review_sheet",
        job=JobParam(PLAN.careqa_review_job("confidence", "margin", "seed")),
    script:
        "../scripts/job.py"


rule careqa_review_agreement:
    input:
        lambda w: sorted(glob.glob(f"{CAREQA_FILLED_SHEETS}/{w.review_kind}/*.csv"))
        or [f"{CAREQA_FILLED_SHEETS}/{w.review_kind}/<one filled sheet per reviewer>.csv"],
    output:
        f"{CAREQA_DIR}/review/{{review_kind}}/agreement.json",
    log:
        f"{LOGS}/careqa/review_agreement/{{review_kind}}.log",
    conda:
        "../envs/careval.yaml"
    params:
        body="careqa.review_agreement",
        job=JobParam(PLAN.careqa_review_job("min_reviewers")),
    script:
        "../scripts/job.py"
