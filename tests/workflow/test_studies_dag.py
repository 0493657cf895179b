"""config/studies.yaml end to end (fewer samples): every kind of study on the demo models, run by snakemake.

Checked against values computed another way: the baseline rows of every study are the run's own per-sample values
exactly; each Relaxed Perplexity variant equals the reference estimator (careval.metrics.relaxed_perplexity,
implementation "reference") at its own l, s and stride on the same questions and targets; McNemar's p of the chat
template study is statsmodels'; a Table 6 question scored against its own statements equals the run's value of that
sample; each variant's own jobs are exactly those its setting reaches.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
import yaml
from statsmodels.stats.contingency_tables import mcnemar
from workflow_runs import jobs_run, make_workdir, snakemake

from careval.plan.study_kinds import study_kind
from support.threads import torch_threads

pytestmark = pytest.mark.slow

SMOL, GEMMA = "smollm2-135m-instruct", "gemma3-270m"
TARGET = "results/correlations.pdf"


@pytest.fixture(scope="module")
def studies_run(repo_root, tmp_path_factory, demo_model_dirs):
    config = yaml.safe_load((repo_root / "config" / "studies.yaml").read_text())
    local = f"local:{repo_root}/resources/models/"  # the prepared folders, wherever the run's working directory is
    for entry in [
        *config["models"].values(),
        config["studies"]["rephraser"]["sweep"]["analysis.resilience"]["rephraser"]["qwen"],
        config["studies"]["general_vs_other"]["sweep"]["models"]["qwen-coder"],
    ]:
        entry["source"] = entry["source"].replace("local:resources/models/", local)
    config["benchmarks"] = {"demo_mcqa": {"limit": 6}, "demo_open_qa": {"limit": 2}}
    config["generation"]["max_new_tokens"] = 12
    config["metrics"]["relaxed_perplexity"].update(max_tokens=6)
    work = make_workdir(repo_root, tmp_path_factory.mktemp("studies") / "careval", config)
    result = snakemake(["--cores", "2", TARGET], work, timeout=1500)
    assert result.returncode == 0, result.stderr[-5000:]
    return work, config, result.stdout + result.stderr


def _read(work, path: str) -> pl.DataFrame:
    return pl.read_parquet(work / path)


def test_every_baseline_row_is_the_run_s_own_value(studies_run):
    work, _, _ = studies_run
    main = _read(work, "results/summary/sample_scores.parquet")
    summary = _read(work, "results/summary/studies.parquet")
    for study, baseline_of in (
        ("chat_template", {SMOL: "chat_template=true"}),
        ("relaxed_perplexity_grid", {SMOL: "l=2,stride=8"}),
        ("general_vs_other", {GEMMA: "baseline"}),
    ):
        table = _read(work, f"results/studies/{study}/sample_scores.parquet")
        assert set(summary.filter(pl.col("study") == study)["baseline"]) == set(baseline_of.values())
        for model, baseline in baseline_of.items():
            ours = table.filter((pl.col("model") == model) & (pl.col("variant") == baseline)).drop("variant")
            keys = ours.select("benchmark", "metric").unique()
            theirs = main.filter(pl.col("model") == model).join(keys, on=["benchmark", "metric"], how="semi")
            order = ["benchmark", "metric", "id"]
            assert ours.height > 0 and ours.sort(order).equals(theirs.sort(order)), study


def test_each_variant_runs_exactly_the_jobs_its_setting_reaches(studies_run):
    """A variant's own jobs are the run's rules under its folder (wildcard vpath); a one-family scoring job is named
    by its family (score_<family>)."""
    _, config, log = studies_run
    by_study: dict[str, set[str]] = {}  # study -> its variants' job kinds
    rules: dict[str, set[str]] = {}  # study -> the rules those jobs are of
    relaxed = []
    for rule, wildcards in jobs_run(log):
        values = dict(part.split("=", 1) for part in wildcards.split(", ") if "=" in part)
        if values.get("vpath") and rule != "relaxed_perplexity_examples":  # Table 6's job: the study's own table
            study = values["vpath"].split("/")[1]
            by_study.setdefault(study, set()).add(f"score_{values['family']}" if rule == "score_family" else rule)
            rules.setdefault(study, set()).add(rule)
            if rule == "relaxed_perplexity" and study == "relaxed_perplexity_grid":
                relaxed.append(wildcards)
    # each a rule its study kind's registered entry names as reading the swept settings (StudyKind.jobs)
    for study, ran in rules.items():
        assert ran <= {job for section in config["studies"][study]["sweep"] for job in study_kind(section).jobs}, study
    chat = {"infer_open", "infer_closed", "relaxed_perplexity", "judge", "score_accuracy"}
    chat |= {f"score_{f}" for f in ("rouge", "bleu", "bertscore", "moverscore", "perplexity")}
    assert by_study["chat_template"] == chat
    assert by_study["relaxed_perplexity_grid"] == {"relaxed_perplexity"}
    assert by_study["rephraser"] == {"rephrase", "score_rephrase", "judge_repeats"}
    assert by_study["general_vs_other"] == chat - {"infer_closed", "score_accuracy"}
    # the grid's variants other than the baseline: one Relaxed Perplexity job each
    assert len(relaxed) == 3


def _relaxed_checks(work, study, samples):
    """(variant, its Relaxed Perplexity job, its targets table, a sample, a reference target) of every check."""
    from careval.jobs.relaxed_perplexity import sample_target_sets

    for variant in study.swept:
        job = study.variants[variant].plan.relaxed_perplexity_job(SMOL, "demo_open_qa")
        root = "results" if variant == "l=2,stride=8" else f"results/studies/relaxed_perplexity_grid/{variant}"
        targets = _read(work, f"{root}/relaxed_perplexity_targets/{SMOL}/demo_open_qa.parquet")
        for sample in samples.head(job.options["limit"]).iter_rows(named=True):
            for text in sample_target_sets(sample)["reference"]:
                yield variant, job, targets, sample, text.strip()


def test_the_relaxed_perplexity_variants_equal_the_definition_at_their_own_settings(studies_run):
    """Each variant's value, from its own job, is the estimator's on the same question and target at the variant's l,
    s and stride, and the estimator's terms are the definition's computed plainly (support.reference.relaxed_terms:
    one forward of question + prefix + target per distinct prefix, no careval code)."""

    from careval.backends import load_backend
    from careval.backends.tokenization import generation_tokens
    from careval.metrics.relaxed_perplexity import relaxed_perplexity
    from careval.plan import build_plan
    from careval.tasks.prompts import fill_prompt
    from support.reference import relaxed_terms

    work, _, _ = studies_run
    plan = build_plan(yaml.safe_load((work / "config" / "config.yaml").read_text()))
    study = plan.studies["relaxed_perplexity_grid"]
    samples = _read(work, "resources/datasets/demo_open_qa.parquet")
    checked = 0
    with torch_threads():  # the job's 1 thread (set by the backend), this worker's back after
        backend = load_backend(plan.models[SMOL].for_job(threads=1))
        for variant, job, targets, sample, target in _relaxed_checks(work, study, samples):
            options = {k: job.options[k] for k in ("l", "s", "stride", "top_p", "max_tokens", "skewed", "seed")}
            prompt = backend.format(fill_prompt(job.entry.prompt, sample))
            question, _ = generation_tokens(backend.tokenizer, prompt, add_bos=backend.add_bos, max_prompt_tokens=10**6)
            ids = backend.tokenizer.encode(" " + target, add_special_tokens=False)
            expected = relaxed_perplexity(backend, question, ids, **options)
            terms = relaxed_terms(
                backend.model, question, ids, expected.continuations, expected.steps, options["skewed"]
            )
            assert expected.cross_entropy == pytest.approx(-sum(terms), rel=1e-5), variant  # float32 sums
            got = targets.filter((pl.col("id") == sample["id"]) & (pl.col("target") == target))
            assert got["relaxed_cross_entropy"][0] == pytest.approx(expected.cross_entropy, rel=1e-6), variant
            checked += 1
    assert checked == 4 * 2
    # and the variants differ: each setting reached its job
    scores = _read(work, "results/studies/relaxed_perplexity_grid/sample_scores.parquet")
    values = {
        v: scores.filter((pl.col("variant") == v) & (pl.col("metric") == "relaxed_cross_entropy"))["value"].to_list()
        for v in study.swept
    }
    assert len({tuple(round(x, 6) for x in v) for v in values.values()}) > 1


def test_the_chat_template_study_is_tested_as_the_comparisons_test(studies_run):
    work, _, _ = studies_run
    table = _read(work, "results/studies/chat_template/sample_scores.parquet")
    rows = _read(work, "results/summary/studies.parquet").filter(pl.col("study") == "chat_template")
    acc = rows.filter((pl.col("benchmark") == "demo_mcqa") & (pl.col("metric") == "acc")).row(0, named=True)
    pivot = table.filter(pl.col("metric") == "acc").pivot("variant", index="id", values="value")
    a, b = pivot["chat_template=false"].to_numpy(), pivot["chat_template=true"].to_numpy()
    contingency = [
        [int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())],
        [int(((a == 0) & (b == 1)).sum()), int(((a == 0) & (b == 0)).sum())],
    ]
    assert acc["p_value"] == pytest.approx(mcnemar(contingency, exact=True).pvalue)
    assert acc["diff"] == pytest.approx(a.mean() - b.mean()) and acc["n"] == 6
    assert rows["p_holm"].is_not_null().all() and (rows["p_holm"] >= rows["p_value"] - 1e-12).all()


def test_the_rephraser_study_averages_its_runs_and_writes_a_blind_review_sheet(studies_run):
    work, _, _ = studies_run
    table = _read(work, "results/studies/rephraser/sample_scores.parquet")
    assert set(table["variant"]) == {"rephraser=smollm2", "rephraser=qwen"}
    assert table["metric"].str.ends_with("_rephrase_variance").all()
    rows = _read(work, "results/summary/studies.parquet").filter(pl.col("study") == "rephraser")
    assert set(rows["variant"]) == {"rephraser=qwen"} and rows["kendall_tau"].is_not_null().any()
    sheet = pl.read_csv(work / "results/studies/rephraser/review_sheet.csv")
    key = pl.read_csv(work / "results/studies/rephraser/review_key.csv")
    assert sheet.height == key.height // 2 > 0 and {"rephrasing_1", "rephrasing_2", "preferred"} <= set(sheet.columns)
    assert set(key["variant"]) == {"rephraser=smollm2", "rephraser=qwen"}


def test_table6_holds_each_question_for_the_model_and_the_study_only_model(studies_run):
    work, _, _ = studies_run
    table = pl.read_csv(work / "results/tables/table6_relaxed_perplexity_examples.csv")
    assert table.columns[:4] == ["question", "must_have", "nice_to_have", "benchmark"]
    assert table["question"].to_list() == [
        "What is the first-line treatment for anaphylaxis?",
        "How does metformin lower blood glucose?",
    ]
    assert {c.split("/")[0] for c in table.columns[4:]} == {"Gemma-3-270M (base)", "Qwen2.5-Coder-0.5B-Instruct"}
    assert table["must_have"][1] == "Metformin reduces glucose production by the liver"
    # the first question against its own reference: the run's value of that sample, for the run's model
    run = _read(work, f"results/relaxed_perplexity_targets/{GEMMA}/demo_open_qa.parquet").filter(
        pl.col("id") == "open-001"
    )
    assert table["Gemma-3-270M (base)/must_have"][0] == pytest.approx(run["relaxed_cross_entropy"].mean(), rel=1e-6)
    assert math.isnan(table["Gemma-3-270M (base)/nice_to_have"][0])  # no Nice_to_have statements of its own
    for ext in ("md", "tex"):
        assert (work / f"results/tables/table6_relaxed_perplexity_examples.{ext}").is_file()
    pages = (work / "results/figures/index.tsv").read_text()
    assert "study_general_vs_other\tstudy" in pages and "table6\ttable6" in pages
