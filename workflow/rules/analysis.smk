# The tidy score tables, then every analysis figure (correlations with bootstrap intervals, metric
# clusters, rankings, resilience, self-consistency) in one PDF, as PNGs, and in the Snakemake report.

from careval.analysis.elo import resolve_elo_path

ANALYSIS = config["analysis"]
# figure name prefix -> (caption, report category); the longest matching prefix wins
FIGURE_CAPTIONS = {
    "scores": ("scores.rst", "1. Scores"),
    "mcqa_vs_open": ("mcqa_vs_open.rst", "2. Correlations"),
    "metric_x_metric": ("metric_x_metric.rst", "2. Correlations"),
    "benchmark_x_benchmark": ("benchmark_x_benchmark.rst", "2. Correlations"),
    "mcqa_vs_elo": ("mcqa_vs_elo.rst", "2. Correlations"),
    "rankings": ("rankings.rst", "3. Rankings"),
    "resilience": ("resilience.rst", "4. Resilience to rephrasing"),
    "consistency": ("consistency.rst", "5. Self-consistency"),
    "consistency_cv": ("consistency_cv.rst", "5. Self-consistency"),
}


def figure_output(name):
    prefix = max((p for p in FIGURE_CAPTIONS if name == p or name.startswith(p + "_")), key=len)
    caption, category = FIGURE_CAPTIONS[prefix]
    return report(f"{RESULTS}/figures/{name}.png", caption=f"../report/{caption}", category=category)


def analysis_inputs(wildcards):
    inputs = {"summary": f"{RESULTS}/summary/scores.parquet", "samples": f"{RESULTS}/summary/sample_scores.parquet"}
    if PLAN.analysis.resilience_benchmarks:
        inputs["resilience"] = f"{RESULTS}/summary/resilience.parquet"
    if PLAN.analysis.consistency_benchmarks:
        inputs["consistency"] = f"{RESULTS}/summary/consistency.parquet"
    if PLAN.analysis.elo:
        inputs["elo"] = str(resolve_elo_path(ANALYSIS["elo_csv"]))
    return inputs


rule aggregate_scores:
    input:
        scores=score_files(),
        datasets=[f"{DATASETS_DIR}/{benchmark}.json" for benchmark in BENCHMARKS],
    output:
        summary=f"{RESULTS}/summary/scores.parquet",
        samples=f"{RESULTS}/summary/sample_scores.parquet",
    params:
        tasks={name: entry.task for name, entry in BENCHMARKS.items()},
        mcqa_average=PLAN.analysis.mcqa_average,
    log:
        f"{LOGS}/aggregate_scores.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/aggregate_scores.py"


rule correlations:
    input:
        unpack(analysis_inputs),
    output:
        pdf=report(f"{RESULTS}/correlations.pdf", caption="../report/correlations_pdf.rst", category="0. All figures"),
        table=f"{RESULTS}/summary/correlations.parquet",
        clusters=f"{RESULTS}/summary/metric_clusters.parquet",
        rankings=f"{RESULTS}/summary/rankings.parquet",
        figures=[figure_output(name) for name in PLAN.analysis.figure_names()],
    params:
        plan=PLAN.analysis,
        settings=ANALYSIS,
        figures_dir=f"{RESULTS}/figures",
    log:
        f"{LOGS}/correlations.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../scripts/correlations.py"
