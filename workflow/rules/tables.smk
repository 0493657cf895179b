# The paper's Appendix E tables (7-20): models x (benchmark, metric), each value with its bootstrap interval,
# as CSV, Markdown and LaTeX under results/tables/ (careval.analysis.tables.paper_tables: which tables a run fills).
from careval.analysis.plan import FIGURE_KINDS

# planned only where the run's benchmarks fill a table (a benchmark of no paper task fills none)
if PLAN.analysis.paper_tables:

    rule paper_tables:
        input:
            summary=f"{RESULTS}/summary/scores.parquet",
            samples=f"{RESULTS}/summary/sample_scores.parquet",
        output:
            csv=[
                report(path, caption="../report/paper_table.rst", category=FIGURE_KINDS["paper_table"][1])
                for path in [f"{RESULTS}/tables/{table.name}.csv" for table in PLAN.analysis.paper_tables]
            ],
            md=[f"{RESULTS}/tables/{table.name}.md" for table in PLAN.analysis.paper_tables],
            tex=[f"{RESULTS}/tables/{table.name}.tex" for table in PLAN.analysis.paper_tables],
        log:
            f"{LOGS}/paper_tables.log",
        conda:
            "../envs/careval.yaml"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=20,
        params:
            body="summary.paper_tables",
            job=JobParam(PLAN.analysis.paper_tables_job),
            # the folder of the tables, where the job writes them
            tables_dir=lambda wildcards, output: os.path.dirname(output.csv[0]),
        script:
            "../scripts/job.py"
