# The tidy score tables, then every analysis figure (correlations with bootstrap intervals, metric
# clusters, rankings, resilience, self-consistency) in one PDF, as PNGs, and in the Snakemake report.
# Their input functions and figure captions: common.smk.


rule aggregate_scores:
    input:
        scores=score_files(),
        datasets=[f"{DATASETS_DIR}/{benchmark}.json" for benchmark in BENCHMARKS],
        # no file: forces the jobs of files cut short or deleted since (common.smk)
        lost=remake_lost_results,
    output:
        summary=f"{RESULTS}/summary/scores.parquet",
        samples=f"{RESULTS}/summary/sample_scores.parquet",
        # per model x benchmark x rubric: the share of judge verdicts parsed / read from the distribution
        judge=f"{RESULTS}/summary/judge_verdicts.parquet",
    log:
        f"{LOGS}/aggregate_scores.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        body="summary.aggregate_scores",
        job=JobParam(PLAN.aggregate_job()),
    script:
        "../scripts/job.py"


# The report's figures as a table: an input of the report, so that a new figure remakes it (FigureIndexJob).
rule figure_index:
    output:
        f"{RESULTS}/figures/index.tsv",
    log:
        f"{LOGS}/figure_index.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        body="summary.figure_index",
        job=JobParam(PLAN.analysis.figure_index_job),
    script:
        "../scripts/job.py"


rule correlations:
    input:
        unpack(analysis_inputs),
        figure_index=f"{RESULTS}/figures/index.tsv",
        lost=remake_lost_results,
    output:
        # the report's pages; rule report puts the run's provenance in front of them (results/correlations.pdf)
        pdf=f"{RESULTS}/report/pages.pdf",
        table=f"{RESULTS}/summary/correlations.parquet",
        clusters=f"{RESULTS}/summary/metric_clusters.parquet",
        rankings=f"{RESULTS}/summary/rankings.parquet",
        figures=[figure_output(figure) for figure in PLAN.analysis.figures],
    log:
        f"{LOGS}/correlations.log",
    conda:
        "../envs/careval.yaml"
    # the PDF and the PNGs are drawn by two processes (figures.save_pages); the last job of a run, alone
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        body="summary.correlations",
        # the figures and the settings this job reads, and nothing else of the config (careval.analysis.plan)
        job=JobParam(PLAN.analysis.report_job),
        # the folder of the planned figures (scores.png is always one), where figures.py writes them
        figures_dir=lambda wildcards, output: os.path.dirname(output.figures[0]),
    script:
        "../scripts/job.py"


# The report: the run's provenance (its manifest's essentials, manifest.smk) on the first page, then the drawn pages.
# A rule of its own, not an input of correlations: the manifest holds the whole config and is rewritten on any change
# of it, which need not redraw the figures; and a job downstream of a job Snakemake plans for its own reasons is not
# checked for its own (dag.update_needrun masks it), so a manifest upstream of the drawing hid the drawing's params.
rule report:
    input:
        pages=rules.correlations.output.pdf,
        manifest=f"{RESULTS}/manifest.json",
    output:
        report(f"{RESULTS}/correlations.pdf", caption="../report/correlations_pdf.rst", category="0. All figures"),
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        body="summary.report",
    script:
        "../scripts/job.py"
