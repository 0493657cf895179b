"""One config -> one plan: schema defaults only, cross-checked names, typed model specs, one-line errors."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError, load_schema
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def demo_raw() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture
def paper_raw() -> dict:
    return yaml.safe_load((REPO / "config" / "paper.yaml").read_text())


def test_model_specs_take_entry_then_size_class_then_schema_defaults(paper_raw):
    paper_raw["models"]["gemma-2-9b-it"]["runtime"] = 17
    plan = build_plan(paper_raw)
    small, medium = paper_raw["model_sizes"]["small"], paper_raw["model_sizes"]["medium"]
    gemma, llama70 = plan.models["gemma-2-9b-it"], plan.models["Llama-3.1-70B-Instruct"]
    assert (gemma.gpus, gemma.mem_mb, gemma.runtime) == (small["gpus"], small["mem_mb"], 17)
    assert (llama70.gpus, llama70.mem_mb, llama70.runtime) == (medium["gpus"], medium["mem_mb"], medium["runtime"])
    # no size class sets threads: the config's resources.llm_threads
    assert gemma.threads == paper_raw["resources"]["llm_threads"]
    assert (gemma.backend, gemma.path, gemma.dtype) == ("vllm", "google/gemma-2-9b-it", "bfloat16")
    # batch_size is not written in paper.yaml: the schema's default, and nothing else's
    assert gemma.batch_size == load_schema()["$defs"]["model"]["properties"]["batch_size"]["default"]
    # the inline judge is a spec of its own, not an evaluated model
    assert plan.judge.name == "prometheus-7b-v2.0" and plan.judge.gpus == small["gpus"]
    assert "prometheus-7b-v2.0" not in plan.models


def test_demo_plan_defaults_come_from_the_schema(demo_raw):
    plan = build_plan(demo_raw)
    resources = load_schema()["properties"]["resources"]["properties"]
    for spec in plan.models.values():
        assert spec.gpus == resources["llm_gpus"]["default"] == 0
        assert spec.runtime == resources["llm_runtime"]["default"]
        assert spec.prepared
    assert plan.judge is plan.models["smollm2-135m-instruct"]
    assert plan.rephraser is plan.models["smollm2-135m-instruct"]
    assert plan.config["metrics"]["relaxed_perplexity"]["top_p"] == 0.9  # filled although the demo does not set it


def test_a_skipped_family_never_needs_its_section(demo_raw):
    demo_raw["metrics"]["skip"] = ["bleurt", "judge"]
    del demo_raw["metrics"]["judge"]
    plan = build_plan(demo_raw)
    assert plan.judge is None
    assert all("judge" not in plan.families(b) for b in plan.benchmarks)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c["metrics"].pop("judge"),
            "metrics.judge is not set, but the judge family is computed: set metrics.judge.model or add judge to metrics.skip",
        ),
        (
            lambda c: (
                c["metrics"]["judge"].pop("models"),
                c["metrics"]["judge"].update(model="gpt-5"),
            ),  # the demo's jury -> one judge
            "metrics.judge.model: 'gpt-5' is not a key of `models` (have: smollm2-135m-instruct, gemma3-270m, "
            "qwen2.5-coder-0.5b-instruct)",
        ),
        (
            lambda c: c["models"]["gemma3-270m"].update(size="huge"),
            "models.gemma3-270m.size: 'huge' is not a key of model_sizes (have: none)",
        ),
        (
            lambda c: c["models"].update({"gemma3-270m": {"source": "local:/no/such/folder"}}),
            "models.gemma3-270m.source: local model folder '/no/such/folder' does not exist",
        ),
        (
            lambda c: (
                c["metrics"]["judge"].pop("models"),
                c["metrics"]["judge"].update(model={"source": "local:/no/judge"}),
            ),  # the demo's jury -> one judge
            "metrics.judge.model.source: local model folder '/no/judge' does not exist",
        ),
        (
            lambda c: c["benchmarks"].update(medqa_typo=None),
            "benchmarks.medqa_typo: unknown benchmark 'medqa_typo': not in the catalogue (did you mean 'medqa'? known: ",
        ),
        (
            lambda c: c["metrics"]["relaxed_perplexity"].update(benchmarks=["demo_mcqa"]),
            "metrics.relaxed_perplexity.benchmarks: demo_mcqa is not an open-ended benchmark of this config "
            "(open-ended: demo_open_qa, demo_note)",
        ),
        (lambda c: c["analysis"]["resilience"].update(rephraser="nobody"), "analysis.resilience.rephraser: 'nobody'"),
        (
            lambda c: c["careqa"]["translator"].update(model="nobody"),
            "careqa.translator.model: 'nobody' is not a key of `models`",
        ),
        (
            lambda c: c["models"]["gemma3-270m"].update(engine="shared"),
            "models.gemma3-270m.engine: 'shared' needs backend: vllm (this entry's backend is hf)",
        ),
        (
            lambda c: c["analysis"].update(mcqa_average=["demo_mcqa", "medqa_typo"]),
            "analysis.mcqa_average: medqa_typo is not a benchmark of the catalogue",
        ),
        (
            lambda c: c["analysis"].update(mcqa_average=["demo_mcqa", "careqa_open"]),
            "analysis.mcqa_average: careqa_open is not an mcqa benchmark",
        ),
        (
            lambda c: c["benchmarks"].update(demo_open_qa={"mcqa_style": "letters"}),
            "benchmarks.demo_open_qa.mcqa_style: 'demo_open_qa' is not an mcqa benchmark (task open)",
        ),
        (
            lambda c: c["benchmarks"].update(demo_mcqa={"mcqa_style": "letters", "prompt": "Q: {question}\nA:"}),
            "benchmarks.demo_mcqa.prompt: no {options} placeholder, but the letters style scores the letters",
        ),
        # issue 40: ranges, names and settings checked before any job, each naming its key and rule
        (
            lambda c: c["analysis"].update(human_rating_range=[5, 1]),
            "analysis.human_rating_range: [5, 1]: the lowest rating comes first, then the highest (e.g. [1, 5])",
        ),
        (
            lambda c: c["models"].update({"m" * 302: c["models"].pop("gemma3-270m")}),
            f"models: the name '{'m' * 40}... (302 characters)' is longer than the 128 characters a name may have "
            "(it names folders and files)",
        ),
        (
            lambda c: c["metrics"]["judge"]["models"].append({"source": f"hf:org/{'j' * 200}"}),
            f"metrics.judge.models[2].source: the model's name '{'j' * 40}...' (200 characters, the source's last "
            "part) is longer than the 128 characters a name may have (it names folders and files)",
        ),
        (
            lambda c: c["metrics"]["judge"].update(model="gemma3-270m"),
            "metrics.judge: set one of model, models (model and models are both set)",
        ),
        (
            lambda c: c["analysis"].update(cost={"metric": "acc_nrom"}),
            "analysis.cost.metric: 'acc_nrom' is not a metric of mcqa_weighted_average under this config "
            "(have: acc, acc_norm)",
        ),
        (
            lambda c: c["analysis"].update(cost={"benchmark": "demo_open_qa", "metric": "rouge_l"}),
            "analysis.cost.metric: 'rouge_l' is not a metric of demo_open_qa under this config (have: rouge1, rouge2, "
            "rougeL, bleu, ",
        ),
        (
            lambda c: c["analysis"].update(cost={"benchmark": "demo_opn_qa"}),
            "analysis.cost.benchmark: 'demo_opn_qa' is not a benchmark of this config (have: demo_mcqa, "
            "demo_open_qa, demo_note, mcqa_weighted_average)",
        ),
    ],
)
def test_every_cross_check_is_one_line_naming_the_key(demo_raw, mutate, message):
    config = copy.deepcopy(demo_raw)
    mutate(config)
    with pytest.raises(ConfigError) as error:
        build_plan(config)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_judges_metric_and_the_defaults_pass_the_cost_check(demo_raw):
    demo_raw["analysis"]["cost"] = {"benchmark": "demo_open_qa", "metric": "judge_helpfulness"}
    assert build_plan(demo_raw).analysis.cost["metric"] == "judge_helpfulness"
    del demo_raw["analysis"]["cost"]
    # the default (acc on the MCQA average) in a run without an MCQA benchmark: the page says so, no error
    demo_raw["benchmarks"] = {"demo_open_qa": None}
    demo_raw["analysis"]["mcqa_average"] = []
    demo_raw.pop("studies", None)  # the demo's studies name demo_mcqa
    assert build_plan(demo_raw).analysis.cost["metric"] == "acc"


def test_an_empty_local_judge_folder_is_caught_by_the_plan(demo_raw, tmp_path):
    folder = tmp_path / "prometheus-7b"
    folder.mkdir()
    demo_raw["metrics"]["judge"]["models"].append({"source": f"local:{folder}"})
    with pytest.raises(ConfigError) as error:
        build_plan(demo_raw)
    assert str(error.value) == (
        f"metrics.judge.models[2].source: local model folder '{folder}' is empty; a local model is the folder "
        "holding config.json, the tokenizer and the weights"
    )
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"has no config\.json"):
        build_plan(demo_raw)


@pytest.mark.parametrize(
    ("mutate", "warning"),
    [
        (
            lambda c: (c["analysis"].update(comparisons={"two_level": True}), c["analysis"]["consistency"].update(r=0)),
            "analysis.comparisons.two_level: true, but the run has no self-consistency samples to resample "
            "(analysis.consistency.r is 0, or no open-ended benchmark): the one-level paired bootstrap runs",
        ),
        (
            lambda c: c["metrics"]["judge"].update(models=["smollm2-135m-instruct"]),
            "metrics.judge.models: a jury of one judge: the self-preference check needs two judges (a judge's grades "
            "of its own answers are compared with the other judges'), and there is no agreement between judges",
        ),
    ],
)
def test_a_setting_that_cannot_take_effect_is_a_warning_naming_it(demo_raw, mutate, warning):
    assert build_plan(demo_raw).warnings == ()
    mutate(demo_raw)
    plan = build_plan(demo_raw)
    assert plan.warnings == (warning,)
    # and a line of the report's first page
    assert warning in plan.analysis.notes and plan.analysis.figures[0].kind == "run_notes"


def test_the_report_says_which_paper_table_is_not_made_and_why(demo_raw):
    table7 = (
        "Table 7 (Perplexity results for Open-ended Medical Questions) is not made: demo_open_qa is scored with none "
        "of perplexity (metrics.skip)"
    )
    table12 = (
        "Table 12 (Prometheus results for summarization and clinical-note taking tasks) is not made: demo_note is "
        "scored with none of judge (metrics.judge.benchmarks)"
    )
    assert build_plan(copy.deepcopy(demo_raw)).analysis.notes == (table12,)
    demo_raw["metrics"]["skip"] = ["bleurt", "perplexity"]
    plan = build_plan(demo_raw)
    assert "table7_perplexity_open_ended_medical_questions" not in [t.name for t in plan.analysis.paper_tables]
    assert plan.analysis.notes[0] == table7 and plan.analysis.notes[-1] == table12
    assert plan.analysis.report_job.notes == plan.analysis.notes


def test_score_files_follow_the_families_of_each_benchmark(demo_raw):
    plan = build_plan(demo_raw)
    assert plan.families("demo_mcqa") == ["accuracy"]
    assert plan.families("demo_open_qa") == [
        "rouge",
        "bleu",
        "bertscore",
        "moverscore",
        "perplexity",
        "judge",
        "relaxed_perplexity",
    ]
    # the judge and Relaxed Perplexity run on demo_open_qa only (metrics.<family>.benchmarks)
    assert plan.families("demo_note") == ["rouge", "bleu", "bertscore", "moverscore", "perplexity"]
    assert len(plan.score_files()) == 3 * (1 + 7 + 5)


def test_the_elo_csv_is_checked_when_the_plan_is_built(demo_raw, tmp_path):
    elo = tmp_path / "elo.csv"
    elo.write_text("model,elo\nSmolLM2-135m-instruct,1000\ngemma3-270m,1100\n")
    demo_raw["analysis"]["elo_csv"] = str(elo)
    with pytest.raises(
        ConfigError,
        match=r"^analysis.elo_csv: .*elo.csv: model 'SmolLM2-135m-instruct' is not in the "
        r"config; did you mean 'smollm2-135m-instruct'\?",
    ):
        build_plan(demo_raw)
    elo.write_text("model,elo\nsmollm2-135m-instruct,1000\ngpt-4o,1300\n")
    assert build_plan(demo_raw).elo_warning == (
        "1 Elo CSV model(s) not in the config, ignored: gpt-4o; 2 configured model(s) without an Elo, not in the "
        "Elo figure: gemma3-270m, qwen2.5-coder-0.5b-instruct"
    )
    elo.write_text("name,score\nx,1\n")
    with pytest.raises(ConfigError, match=r"^analysis.elo_csv: .*elo.csv:1: header lacks column\(s\) model, elo"):
        build_plan(demo_raw)


def test_a_prompt_override_without_its_placeholder_is_a_config_error(demo_raw):
    demo_raw["benchmarks"]["demo_open_qa"] = {"prompt": "Answer the question."}
    with pytest.raises(ConfigError, match=r"^benchmarks.demo_open_qa.prompt: no \{question\} placeholder"):
        build_plan(demo_raw)


def test_paper_sets_are_appendix_bs_and_figure_17_needs_relaxed_perplexity(paper_raw, demo_raw):
    plan = build_plan(paper_raw)
    sets = plan.analysis.model_sets
    assert (len(sets["small"]), len(sets["medium"]), len(sets["b2"])) == (9, 8, 11)
    assert plan.analysis.figure_sets["metric_x_metric"] == ("b2",)
    assert "relaxed_perplexity_vs_all_b2" in plan.analysis.figure_names()
    demo_raw["analysis"]["relaxed_perplexity_anchor"] = "demo_note"  # Relaxed Perplexity runs on demo_open_qa only
    with pytest.raises(
        ConfigError, match=r"^analysis.relaxed_perplexity_anchor: 'demo_note' is not scored with Relaxed"
    ):
        build_plan(demo_raw)
    demo_raw["analysis"]["relaxed_perplexity_anchor"] = None
    demo_raw["analysis"]["model_sets"]["demo"].append("gpt-5")
    with pytest.raises(ConfigError, match=r"^analysis.model_sets.demo: gpt-5 is not a key of `models`"):
        build_plan(demo_raw)


def test_paper_resilience_is_six_rephrasings_by_an_inline_qwen_on_mediqa(paper_raw):
    plan = build_plan(paper_raw)
    assert (plan.rephraser.name, plan.rephraser.path) == ("Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct")
    assert plan.rephraser.gpus == paper_raw["model_sizes"]["medium"]["gpus"]
    assert "Qwen2.5-72B-Instruct" not in plan.models and "Qwen2.5-72B-Instruct" in plan.entries
    assert plan.analysis.resilience_benchmarks == ["mediqa2019"] and plan.config["analysis"]["resilience"]["k"] == 6
    paper_raw["analysis"]["resilience"]["rephraser"] = {"source": "pypi:x==1"}
    with pytest.raises(ConfigError, match=r"analysis\.resilience\.rephraser"):
        build_plan(paper_raw)


def test_the_mcqa_average_is_the_papers_set_less_what_the_run_lacks(paper_raw, demo_raw):
    # the schema's default: CareQA-Close once (English); careqa_es is reported, not averaged
    assert build_plan(paper_raw).analysis.mcqa_average == [
        "medmcqa",
        "pubmedqa",
        "medqa",
        "mmlu_anatomy",
        "mmlu_clinical_knowledge",
        "mmlu_college_biology",
        "mmlu_college_medicine",
        "mmlu_medical_genetics",
        "mmlu_professional_medicine",
        "careqa_en",
    ]
    assert build_plan(demo_raw).analysis.mcqa_average == ["demo_mcqa"]
    demo_raw["analysis"]["mcqa_average"] = ["medqa", "demo_mcqa", "careqa_en"]
    assert build_plan(demo_raw).analysis.mcqa_average == ["demo_mcqa"]


def test_the_mcqa_style_override_switches_the_prompt(demo_raw):
    demo_raw["benchmarks"]["demo_mcqa"] = {"mcqa_style": "letters"}
    entry = build_plan(demo_raw).benchmarks["demo_mcqa"]
    assert (entry.mcqa_style, entry.prompt) == ("letters", "Question: {question}\nChoices:\n{options}\nAnswer:")


def test_a_job_spec_is_built_once_per_plan_and_a_replaced_plan_builds_its_own(demo_raw):
    """The rules ask the plan for one job's spec many times over: the same spec object each time, equal to the spec a
    plan built anew gives; a plan made from it by replace() (a study's variant) builds its own."""
    plan, fresh = build_plan(copy.deepcopy(demo_raw)), build_plan(copy.deepcopy(demo_raw))
    model, benchmark = next(iter(plan.models)), "demo_open_qa"
    families = plan.families(benchmark)
    assert plan.infer_job(model, benchmark) is plan.infer_job(model, benchmark)
    assert plan.score_job(benchmark, families) is plan.score_job(benchmark, list(families))
    assert plan.judge_job(repeats=True) is plan.judge_job(repeats=True) is not plan.judge_job()
    assert repr(plan.infer_job(model, benchmark)) == repr(fresh.infer_job(model, benchmark))
    assert repr(plan.judge_job(repeats=True)) == repr(fresh.judge_job(repeats=True))
    other = replace(plan, models={**plan.models, model: replace(plan.models[model], dtype="float16")})
    assert other.infer_job(model, benchmark).model.dtype == "float16"
    assert plan.infer_job(model, benchmark).model.dtype == fresh.models[model].dtype != "float16"
