# One vLLM engine per model and run, for a model whose entry says `engine: shared` (backend vllm): a
# Snakemake service job in the model's group starts vLLM's OpenAI-compatible server, and the model's
# inference, Relaxed Perplexity and self-consistency jobs of this run use it over HTTP
# (careval.backends.vllm_server) instead of each starting an engine. Snakemake runs the service job
# with all the jobs it serves, at once, as one group job (one SLURM allocation), and stops it after
# the last one. Only the jobs that have to run are served: their inputs name the address file
# ancient (common.smk, engine_input), so adding a benchmark still runs only its own jobs.


rule vllm_engine:
    input:
        model=model_folder,
    output:
        service(f"{RESULTS}/engines/{{model}}.json"),
    log:
        f"{LOGS}/vllm_engine/{{model}}.log",
    group:
        "llm_{model}"
    conda:
        "../envs/careval-gpu.yaml"
    # the engine holds the model's GPUs, memory and llm_slot; the jobs it serves ask for none of them
    threads: lambda w: evaluated(w).threads
    resources:
        **llm_resources(evaluated),
    params:
        job=lambda w: JobParam(PLAN.engine_job(w.model, engine_command(evaluated(w)))),
    # The address file exists at once (as `starting`): Snakemake starts the served jobs with this one and
    # gives their inputs only --latency-wait seconds to appear; they wait for `ready` themselves.
    shell:
        """echo '{{"state": "starting"}}' > {output:q}
        exec {params.job.spec.command} --url-file {output:q} > {log:q} 2>&1"""
