# The run's provenance (careval.manifest): careval's commit, the resolved config, every model's weights digest and the
# dtype its jobs ran it in, every dataset's digest, the numeric packages' versions and the machine. Made once the
# scores are aggregated (so the jobs' logs are there to read); the report's first page states its essentials.

from careval.manifest import manifest_job


rule manifest:
    input:
        summary=f"{RESULTS}/summary/scores.parquet",
        datasets=[f"{DATASETS_DIR}/{benchmark}.parquet" for benchmark in BENCHMARKS],
    output:
        f"{RESULTS}/manifest.json",
    log:
        f"{LOGS}/manifest.log",
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        body="summary.manifest",
        job=JobParam(manifest_job(PLAN)),
    script:
        "../scripts/job.py"
