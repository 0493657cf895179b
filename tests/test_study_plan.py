"""Studies (config `studies:`, careval.plan.studies): variants planned from the run's own config, each output the run's
file where the variant's jobs are the run's, and one-line errors naming the study and the key."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from careval.config import ConfigError
from careval.plan import build_plan

REPO = Path(__file__).resolve().parents[1]
SMOL, GEMMA, QWEN = "smollm2-135m-instruct", "gemma3-270m", "qwen2.5-coder-0.5b-instruct"


@pytest.fixture
def demo_raw() -> dict:
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw.pop("studies", None)
    return raw


def plan_with(raw: dict, **studies) -> object:
    config = copy.deepcopy(raw)
    config["studies"] = studies
    return build_plan(config)


def test_a_grid_names_every_combination_and_the_run_s_own_is_each_model_s_baseline(demo_raw):
    demo_raw["metrics"]["relaxed_perplexity"].update(l=2, s=3, stride=8)
    plan = plan_with(
        demo_raw, grid={"sweep": {"metrics.relaxed_perplexity": {"l": [2, 3], "s": [3, 4], "stride": [8, 4]}}}
    )
    study = plan.studies["grid"]
    assert study.swept == [f"l={k},s={s},stride={t}" for k in (2, 3) for s in (3, 4) for t in (8, 4)]
    assert study.kind == "metric" and study.benchmarks == ("demo_open_qa",)
    # the run's own setting (l 2, s 3, stride 8) is every model's baseline: its files are the run's
    assert study.baselines == dict.fromkeys(plan.models, "l=2,s=3,stride=8")
    assert study.variants_of(SMOL) == study.swept
    own = study.score_file("l=2,s=3,stride=8", SMOL, "demo_open_qa", "relaxed_perplexity")
    assert own == f"results/scores/{SMOL}/demo_open_qa/relaxed_perplexity.parquet"
    other = study.score_file("l=3,s=4,stride=4", SMOL, "demo_open_qa", "relaxed_perplexity")
    assert other == f"results/studies/grid/l=3,s=4,stride=4/scores/{SMOL}/demo_open_qa/relaxed_perplexity.parquet"
    # each variant's plan holds its own options, and nothing else of the run changed
    options = study.variants["l=3,s=4,stride=4"].plan.relaxed_perplexity_job(SMOL, "demo_open_qa").options
    assert (options["l"], options["s"], options["stride"]) == (3, 4, 4)
    assert repr(study.variants["l=3,s=4,stride=4"].plan.infer_job(SMOL, "demo_open_qa")) == repr(
        plan.infer_job(SMOL, "demo_open_qa")
    )
    # a metric study reads the run's answers: no job of its own but the family's
    assert study.own_jobs() == []


def test_a_model_setting_reruns_that_model_s_jobs_and_keeps_the_judge_and_rephraser(demo_raw):
    """SmolLM2 is the demo's judge and rephraser too: its variant without a chat template is an evaluated model's."""
    plan = plan_with(demo_raw, chat={"models": [SMOL], "sweep": {"model": {"chat_template": [False, True]}}})
    study = plan.studies["chat"]
    assert study.baselines == {SMOL: "chat_template=true"}
    variant = study.variants["chat_template=false"].plan
    assert variant.models[SMOL].chat_template is False
    assert repr(variant.judge_job()) == repr(plan.judge_job()) and repr(variant.rephrase_job()) == repr(
        plan.rephrase_job()
    )
    assert [repr(spec) for spec in variant.judges.values()] == [repr(spec) for spec in plan.judges.values()]
    # every benchmark the model runs: its inference, scoring, grades and Relaxed Perplexity under the variant
    assert study.benchmarks == tuple(plan.benchmarks)
    assert {(v, b) for v, _, b, _ in study.own_jobs()} == {("chat_template=false", b) for b in plan.benchmarks}
    for source in study.sources():
        own = source.path.startswith("results/studies/chat/chat_template=false/")
        assert own == (source.variant == "chat_template=false"), source
    # the other models are not part of it
    assert {source.model for source in study.sources()} == {SMOL}


def test_another_model_in_place_reads_that_model_s_files_or_runs_a_model_of_the_study_only(demo_raw):
    qwen = copy.deepcopy(demo_raw["models"][QWEN])
    plan = plan_with(
        demo_raw,
        general_vs_other={
            "models": [SMOL],
            "benchmarks": ["demo_open_qa"],
            "sweep": {"models": {"evaluated": QWEN, "qwen-study-only": {**qwen, "label": "Qwen (study only)"}}},
        },
    )
    study = plan.studies["general_vs_other"]
    assert study.swept == ["model=evaluated", "model=qwen-study-only"] and study.baselines == {SMOL: "baseline"}
    # an evaluated model in place: its own files of the run
    assert (
        study.score_file("model=evaluated", SMOL, "demo_open_qa", "rouge")
        == f"results/scores/{QWEN}/demo_open_qa/rouge.parquet"
    )
    # a model of the study only: its jobs are the study's, and it is prepared like any other model
    path = study.score_file("model=qwen-study-only", SMOL, "demo_open_qa", "rouge")
    assert path == f"results/studies/general_vs_other/model=qwen-study-only/scores/{SMOL}/demo_open_qa/rouge.parquet"
    assert study.variants["model=qwen-study-only"].plan.models[SMOL].name == "qwen-study-only"
    assert plan.prepare_job("qwen-study-only").weights == plan.models[QWEN].weights
    assert "qwen-study-only" not in plan.models  # not an evaluated model of the run
    assert study.own_jobs() == [("model=qwen-study-only", SMOL, "demo_open_qa", 0)]


def test_a_study_with_runs_rephrases_each_run_with_the_next_seed(demo_raw):
    plan = plan_with(
        demo_raw,
        rephraser={"runs": 3, "sweep": {"analysis.resilience": {"rephraser": {"smollm2": SMOL, "qwen": QWEN}}}},
    )
    study = plan.studies["rephraser"]
    assert study.kind == "analysis" and study.baselines == dict.fromkeys(plan.models, "rephraser=smollm2")
    seeds = [p.rephrase_job().sampling.seed for p in study.variants["rephraser=qwen"].plans]
    base = plan.rephrase_job().sampling.seed
    assert seeds == [base, base + 1, base + 2]
    assert study.variants["rephraser=qwen"].plans[0].rephraser.name == QWEN
    # run 0 of the run's own rephraser is the run's file; its later runs and every run of the other are the study's
    assert study.rephrase_file("rephraser=smollm2", 0, GEMMA, "demo_open_qa", "rephrase_scores") == (
        f"results/rephrase_scores/{GEMMA}/demo_open_qa.parquet"
    )
    assert study.rephrase_file("rephraser=smollm2", 2, GEMMA, "demo_open_qa", "rephrase_judge") == (
        f"results/studies/rephraser/rephraser=smollm2/run2/rephrase_judge/{GEMMA}/demo_open_qa.parquet"
    )
    assert len(study.own_jobs()) == len(plan.models) * (3 + 2)


def test_a_benchmark_setting_changes_only_the_named_benchmarks(demo_raw):
    plan = plan_with(
        demo_raw,
        prompts={
            "models": [GEMMA],
            "benchmarks": ["demo_open_qa"],
            "sweep": {"benchmark": {"prompt": {"terse": "Q: {question}\nA:", "plain": "{question}"}}},
        },
    )
    study = plan.studies["prompts"]
    assert study.baselines == {GEMMA: "baseline"}
    assert study.variants["prompt=terse"].plan.benchmarks["demo_open_qa"].prompt == "Q: {question}\nA:"
    assert study.variants["prompt=terse"].plan.benchmarks["demo_mcqa"].prompt == plan.benchmarks["demo_mcqa"].prompt


@pytest.mark.parametrize(
    ("study", "message"),
    [
        (
            {"sweep": {"model": {"threads": [1, 2]}}},
            r"studies\.s\.sweep\.model\.threads: not a setting a study of model sweeps",
        ),
        (
            {"sweep": {"metrics.bertscore": {"batch_size": [4, 8]}}},
            r"sweep\.metrics\.bertscore\.batch_size: not a setting",
        ),
        ({"sweep": {"metrics.nonsense": {"x": [1]}}}, r"studies\.s\.sweep: 'nonsense' is not a metric family"),
        ({"sweep": {"benchmark": {"prompt": {"a": "{question}"}}}}, r"studies\.s\.benchmarks: name the benchmarks"),
        (
            {"benchmarks": ["demo_open_qa"], "sweep": {"benchmark": {"prompt": ["Q: {question}"]}}},
            r"studies\.s\.sweep\.benchmark\.prompt: value 1 \('Q: \{question\}'\) is not a short word",
        ),
        ({"sweep": {"model": {"chat_template": [True, True]}}}, r"the values true are listed twice"),
        ({"models": ["nope"], "sweep": {"model": {"dtype": ["float32"]}}}, r"studies\.s\.models: nope is not a key"),
        (
            {"sweep": {"metrics.relaxed_perplexity": {"l": [2]}}},
            r"studies\.s\.sweep\.metrics\.relaxed_perplexity: every value is the run's own setting \(l=2\)",
        ),
        ({"sweep": {"metrics.relaxed_perplexity": {"l": [3, 3.0]}}}, r"variants l=3 and l=3.0 run the same jobs"),
        ({"runs": 2, "sweep": {"model": {"dtype": ["float32"]}}}, r"studies\.s\.runs: only a study of analysis"),
        (
            {"benchmarks": ["demo_mcqa"], "sweep": {"metrics.relaxed_perplexity": {"l": [3]}}},
            r"studies\.s\.benchmarks: demo_mcqa is not scored with relaxed_perplexity",
        ),
        (
            {"sweep": {"model": {"dtype": ["float16x"]}}},
            r"studies\.s: variant dtype=float16x: bad value for config key 'models\.",
        ),
        ({"sweep": {"models": ["not-a-model"]}}, r"studies\.s\.sweep\.models: 'not-a-model' is not a key of `models`"),
        (
            {"sweep": {"metrics.relaxed_perplexity": {"l": [4]}}},
            r"studies\.s: variant l=4: metrics\.relaxed_perplexity\.l: 4 is more than s \(3\): need l <= s",
        ),
        (
            {"sweep": {"model": {"dtype": ["float32"]}}, "examples": [{"benchmark": "demo_mcqa", "id": "x"}]},
            r"studies\.s\.examples\[0\]\.benchmark: 'demo_mcqa' is not an open-ended benchmark",
        ),
    ],
)
def test_a_bad_study_is_one_line_naming_it(demo_raw, study, message):
    with pytest.raises(ConfigError, match=message) as error:
        plan_with(demo_raw, s=study)
    assert "\n" not in str(error.value)


def test_the_schema_checks_a_study_s_shape(demo_raw):
    with pytest.raises(ConfigError, match=r"studies\.s"):
        plan_with(demo_raw, s={"sweep": {"model": {"chat_template": [False]}, "generation": {"seed": [1]}}})
    with pytest.raises(ConfigError, match=r"studies\.s"):
        plan_with(demo_raw, s={"sweep": {"analysis.consistency": {"r": [2]}}})
    with pytest.raises(ConfigError, match=r"unknown config key 'studies\.s\.runz'"):
        plan_with(demo_raw, s={"runz": 2, "sweep": {"model": {"dtype": ["float32"]}}})


def test_one_table6_per_run(demo_raw):
    example = [{"benchmark": "demo_open_qa", "id": "q1"}]
    with pytest.raises(ConfigError, match=r"studies: a, b all have examples"):
        plan_with(
            demo_raw,
            a={"sweep": {"model": {"dtype": ["float32"]}}, "examples": example},
            b={"sweep": {"metrics.relaxed_perplexity": {"l": [3]}}, "examples": example},
        )


def test_the_studies_add_a_page_each_and_nothing_else_to_the_report(demo_raw):
    without = build_plan(copy.deepcopy(demo_raw))
    plan = plan_with(demo_raw, one={"sweep": {"metrics.relaxed_perplexity": {"l": [3]}}})
    assert [f.name for f in plan.analysis.figures] == [f.name for f in without.analysis.figures] + ["study_one"]
    # the variant plans are the run's own code's: planning them costs milliseconds, not a run
    assert re.fullmatch(r"[A-Za-z0-9_=.,-]+", plan.studies["one"].swept[0])


def test_a_study_kind_is_one_registered_entry_the_schema_names(demo_raw, monkeypatch):
    """careval.plan.study_kinds.STUDY_KINDS decides what a section sweeps and where its values go: a kind registered in a
    few lines (here a narrower `generation`) is planned by it; the schema takes every registered section (and any
    name of that shape: a plugin's kind, careval.plugins), and the plan refuses a section no kind registered."""
    from careval.plan.study_kinds import STUDY_KINDS, StudyKind

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    pattern = schema["$defs"]["study"]["properties"]["sweep"]["propertyNames"]["pattern"]
    sections = [s if s != "metrics" else "metrics.rouge" for s in STUDY_KINDS]
    assert sorted(s for s in sections if re.match(pattern, s)) == sorted(sections)
    assert re.match(pattern, "tokenizer")
    with pytest.raises(ConfigError, match=r"studies\.toy\.sweep: 'tokenizer' is not a section a study sweeps"):
        plan_with(demo_raw, toy={"models": [SMOL], "sweep": {"tokenizer": {"x": [1, 2]}}})

    monkeypatch.setitem(STUDY_KINDS, "generation", StudyKind("generation", "model", ("temperature",), "section"))
    sweep = {"generation": {"temperature": [0.0, 0.7]}}
    plan = plan_with(demo_raw, toy={"models": [SMOL], "benchmarks": ["demo_open_qa"], "sweep": sweep})
    study = plan.studies["toy"]
    assert study.kind == "model" and study.swept == ["temperature=0.0", "temperature=0.7"]
    assert study.variants["temperature=0.7"].plan.infer_job(SMOL, "demo_open_qa").sampling.temperature == 0.7
    assert study.own_jobs() == [("temperature=0.7", SMOL, "demo_open_qa", 0)]
    with pytest.raises(ConfigError, match=r"not a setting a study of generation sweeps \(these change a value: temp"):
        plan_with(demo_raw, toy={"models": [SMOL], "sweep": {"generation": {"top_p": [0.5, 0.9]}}})
