"""The demo DAG end to end with snakemake: plans offline, runs in a temporary directory, writes the PDF."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from workflow_runs import job_kind

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def _workdir(repo: Path, tmp: Path, config: dict) -> Path:
    """A copy of what a clone holds (no results, no models), with the given config as config/config.yaml."""
    work = tmp / "careval"
    work.mkdir()
    for item in ("Snakefile", "workflow"):
        src = repo / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / item)
    (work / "config").mkdir()
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return work


def _run(args: list[str], cwd: Path, timeout: int, offline_net: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [SNAKEMAKE, *args]
    if offline_net and shutil.which("unshare") and os.geteuid() == 0:
        # a private network namespace with no interfaces: proof that planning needs no network
        command = ["unshare", "--net", *command]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _raw_demo_config(repo: Path) -> dict:
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())


def _config_errors(repo: Path, tmp: Path, config: dict) -> tuple[Path, list[str]]:
    """Plan `config`, which must fail: the working directory and the careval config error lines."""
    work = _workdir(repo, tmp, config)
    result = _run(["-n", "--cores", "1"], work, timeout=120)
    assert result.returncode != 0
    return work, [line for line in (result.stdout + result.stderr).splitlines() if "careval config error" in line]


def test_dry_run_plans_the_demo_without_network(repo_root, tmp_path):
    config = _raw_demo_config(repo_root)
    work = _workdir(repo_root, tmp_path, config)
    result = _run(["-n", "--cores", "2", "results/correlations.pdf"], work, timeout=120, offline_net=True)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout + result.stderr
    n_models, n_bench = len(config["models"]), len(config["benchmarks"])
    assert "correlations" in out and "aggregate_scores" in out
    # the run's own jobs by rule (a study variant's, under its folder, is study_<rule>: workflow_runs.job_kind)
    counts: dict[str, int] = {}
    for _, rule, body in re.findall(r"^( *)(?:local)?rule (\w+):\n((?:\1    .*\n)*)", out, re.MULTILINE):
        wildcards = re.search(r"^ *wildcards: (.*)$", body, re.MULTILINE)
        values = dict(p.split("=", 1) for p in (wildcards.group(1) if wildcards else "").split(", ") if "=" in p)
        kind = job_kind(rule, values)
        counts[kind] = counts.get(kind, 0) + 1
    # one inference job per model x benchmark (the model loads once per job)
    assert counts.get("infer_open") == n_models * 2  # the two open-ended demo benchmarks
    assert counts.get("infer_closed") == n_models * (n_bench - 2)
    assert counts.get("prepare_model") == n_models  # a fresh workdir writes each model's marker
    # one scoring job per model x benchmark, whatever the number of metric families
    assert counts.get("score_open") == n_models * 2 and counts.get("score_mcqa") == n_models * (n_bench - 2)
    # the LLM-based families load a model in their own job per model x open benchmark
    n_judged = len(config["metrics"]["judge"].get("benchmarks", ["demo_open_qa", "demo_note"]))
    n_relaxed = len(config["metrics"]["relaxed_perplexity"].get("benchmarks", ["demo_open_qa", "demo_note"]))
    # a jury (metrics.judge.models): each judge in jobs of its own, as a single judge (a jury of one)
    judges = config["metrics"]["judge"].get("models") or [config["metrics"]["judge"]["model"]]
    judge_rule = "judge"
    assert counts.get(judge_rule) == n_models * n_judged * len(judges)
    assert counts.get("relaxed_perplexity") == n_models * n_relaxed
    assert "score_bleurt" not in counts and "score_radgraph" not in counts  # skipped / no MIMIC in the demo
    # the resilience and self-consistency reruns, on the benchmarks the analysis config names
    n_resilience = len(config["analysis"]["resilience"].get("benchmarks", ["demo_open_qa", "demo_note"]))
    n_consistency = len(config["analysis"]["consistency"].get("benchmarks", ["demo_open_qa", "demo_note"]))
    assert counts.get("rephrase") == n_models * n_resilience
    assert counts.get("sample_consistency") == n_models * n_consistency
    # the judge grades the repeats of every judged benchmark too (paper figures 2, 13-16)
    judged = set(config["metrics"]["judge"].get("benchmarks", ["demo_open_qa", "demo_note"]))
    n_repeats_judged = sum(
        len(judged & set(config["analysis"][kind].get("benchmarks", ["demo_open_qa", "demo_note"])))
        for kind in ("resilience", "consistency")
    )
    assert n_repeats_judged > 0
    assert counts.get(f"{judge_rule}_repeats") == n_models * n_repeats_judged * len(judges)


def test_misspelt_key_stops_before_any_job(repo_root, tmp_path):
    config = _raw_demo_config(repo_root)
    config["generation"]["max_new_tokenz"] = 3
    work, errors = _config_errors(repo_root, tmp_path, config)
    assert errors == [
        "careval config error: unknown config key 'generation.max_new_tokenz' "
        "(allowed: max_new_tokens, seed, stop, temperature, top_p)"
    ]
    assert not (work / "results").exists()


@pytest.mark.slow
def test_demo_dag_runs_and_writes_the_pdf(repo_root, tmp_path, demo_model_dirs):
    from pypdf import PdfReader

    config = _raw_demo_config(repo_root)
    # the same DAG on a few samples; the models are the ones prepared once under resources/models
    config["models_dir"] = str(repo_root / "resources" / "models")
    # a few samples of each benchmark (a benchmark's own limit wins over the global one); demo_open_qa's 6 are the
    # samples resources/demo/human_ratings.csv rates
    limits = {"demo_mcqa": 4, "demo_open_qa": 6, "demo_note": 4}
    config["benchmarks"] = {
        name: {**(entry or {}), "limit": limits[name]} for name, entry in config["benchmarks"].items()
    }
    config["generation"]["max_new_tokens"] = 12
    # the LLM-based metrics and reruns on 2 samples with short outputs: every job kind still runs
    config["metrics"]["judge"].update(limit=2, max_new_tokens=16)
    # s = 3: the demo's study keeps l = 3 of them
    config["metrics"]["relaxed_perplexity"].update(limit=2, s=3, max_tokens=8, stride=4)
    config["analysis"]["resilience"].update(limit=2, sampling={"max_new_tokens": 12})
    config["analysis"]["consistency"].update(limit=2, r=2, sampling={"max_new_tokens": 8})
    work = _workdir(repo_root, tmp_path, config)
    result = _run(["--cores", "2", "results/correlations.pdf"], work, timeout=1800)
    assert result.returncode == 0, result.stderr[-5000:]

    summary = pl.read_parquet(work / "results" / "summary" / "scores.parquet")
    models = sorted(config["models"])
    assert sorted(summary["model"].unique()) == models
    assert set(summary.columns) >= {"model", "benchmark", "task", "metric", "value", "n"}
    open_metrics = {
        "rouge1",
        "rouge2",
        "rougeL",
        "bleu",
        "sacrebleu",
        "sacrebleu_corpus",
        "bertscore_f1",
        "moverscore",
        "word_perplexity",
        "byte_perplexity",
        "bits_per_byte",
        "word_perplexity_given_question",
        "relaxed_perplexity",
        "relaxed_cross_entropy",
        "judge_helpfulness",
        "judge_factual_validity",
        "judge_helpfulness_expected",
        "judge_factual_validity_expected",
    }
    for model in models:
        rows = summary.filter((pl.col("model") == model) & (pl.col("benchmark") == "demo_open_qa"))
        assert open_metrics <= set(rows["metric"])
        # a judge verdict is a 1-5 score or a counted parse_error, never a silent number
        judge = rows.filter(pl.col("metric").str.starts_with("judge_"))
        assert (judge["n"] + judge["n_failed"] > 0).all()
        # every judged answer gets a number: parsed, or read from the (hf) judge's own score distribution
        assert judge.filter(pl.col("n") > 0)["value"].is_finite().all()
        acc = summary.filter(
            (pl.col("model") == model) & (pl.col("benchmark") == "mcqa_weighted_average") & (pl.col("metric") == "acc")
        )
        assert acc.height == 1 and acc["n"][0] == 4 and 0.0 <= acc["value"][0] <= 1.0
    verdicts = pl.read_parquet(work / "results" / "summary" / "judge_verdicts.parquet").filter(pl.col("n_judged") > 0)
    assert verdicts.height and (verdicts["n_parsed"] + verdicts["n_from_distribution"] == verdicts["n_judged"]).all()

    from careval.plan import build_plan

    # the plan's pages: the analysis' and those the whole plan adds (the Appendix E tables, the jury's)
    figures = build_plan(yaml.safe_load((work / "config" / "config.yaml").read_text())).analysis.figure_names()
    reader = PdfReader(work / "results" / "correlations.pdf")
    texts = [page.extract_text() for page in reader.pages]
    assert len(texts) == len(figures) + 1  # the run's provenance (results/manifest.json), then a page per figure
    assert "What made these numbers" in texts[0] and "careval 0.1.0, commit" in texts[0]
    assert any("Metric x metric correlation on demo_open_qa" in t for t in texts)
    # every metric family of the suite that ran is on the metric x metric page
    page = next(t for t in texts if "Metric x metric correlation on demo_open_qa" in t)
    # (the paper's metric view, analysis.metric_view: its eleven metrics, Prometheus the main rubric)
    for label in ("moverscore", "word_perplexity", "judge_helpfulness", "bertscore_f1", "rouge1"):
        assert label in page, label
    pngs = sorted(p.stem for p in (work / "results" / "figures").glob("*.png"))
    assert pngs == sorted(figures)
    # the CareQA statistics (issue 26): Table 4 under results/tables/ and as a page, figures 5-7 as pages
    assert (work / "results" / "tables" / "table4_careqa_statistics.tex").is_file()
    for title in ("Table 4: CareQA", "Figure 5: CareQA", "Figure 6: CareQA", "Figure 7: CareQA"):
        assert any(title in t for t in texts), title
    # the demo's studies (careval.plan.studies): the chat template off for SmolLM2 on MCQA, BERTScore at layer 3; each
    # baseline's rows are the run's own values, each study has its page, and every row of it a pair a test can find
    # significant (issue 45: samples both scored, and enough of them for p < alpha)
    main = pl.read_parquet(work / "results" / "summary" / "sample_scores.parquet")
    studies = pl.read_parquet(work / "results" / "summary" / "studies.parquet")
    for study, baseline, variant in (
        ("chat_template", "chat_template=true", "chat_template=false"),
        ("bertscore_layer", "num_layers=6", "num_layers=3"),
    ):
        table = pl.read_parquet(work / "results" / "studies" / study / "sample_scores.parquet")
        ours = table.filter(pl.col("variant") == baseline).drop("variant")
        theirs = main.join(
            ours.select("model", "benchmark", "metric").unique(), on=["model", "benchmark", "metric"], how="semi"
        )
        order = ["model", "benchmark", "metric", "id"]
        assert ours.height and ours.sort(order).equals(theirs.sort(order)), study
        rows = studies.filter(pl.col("study") == study)
        assert set(rows["variant"]) == {variant} and set(rows["baseline"]) == {baseline}
        assert rows["p_value"].is_not_null().all() and any(f"Study '{study}'" in t for t in texts)
        # the smallest p each exact test can reach over its n pairs (both tails of the most extreme outcome): on this
        # slice (a few samples) above 0.05; the demo's own 30 and 16 samples reach far below it
        assert (rows["n"] > 0).all(), study
        assert [round(p, 12) for p in rows["min_p"]] == [round(min(1.0, 2 / 2**n), 12) for n in rows["n"]], study
    # the judge is in the resilience and self-consistency tables: a value or a counted failure per graded repeat
    for kind in ("resilience", "consistency"):
        table = pl.read_parquet(work / "results" / "summary" / f"{kind}.parquet")
        assert {"judge_helpfulness", "judge_factual_validity"} <= set(table["metric"]), kind
        judged = pl.read_parquet(
            work
            / "results"
            / ("rephrase_judge" if kind == "resilience" else "consistency_judge")
            / models[0]
            / "demo_open_qa.parquet"
        )
        assert judged.height > 0 and set(judged["status"]) <= {"ok", "parse_error", "from_distribution", "empty_output"}


def test_family_limited_to_a_closed_benchmark_stops_before_any_job(repo_root, tmp_path):
    config = _raw_demo_config(repo_root)
    config["metrics"]["relaxed_perplexity"]["benchmarks"] = ["demo_mcqa"]
    _, errors = _config_errors(repo_root, tmp_path, config)
    assert errors == [
        "careval config error: metrics.relaxed_perplexity.benchmarks: demo_mcqa is not an "
        "open-ended benchmark of this config (open-ended: demo_open_qa, demo_note)"
    ]


def test_a_key_written_twice_in_a_config_file_stops_before_any_job(repo_root, tmp_path):
    """YAML keeps the last of two equal keys: a second `benchmarks:` block would silently drop the first."""
    work = _workdir(repo_root, tmp_path, _raw_demo_config(repo_root))
    config = work / "config" / "config.yaml"
    lines = config.read_text().splitlines()
    config.write_text("\n".join([*lines, "benchmarks:", "  demo_note:"]) + "\n")
    first = lines.index("benchmarks:") + 1
    result = _run(["-n", "--cores", "1"], work, timeout=120)
    assert result.returncode != 0
    errors = [line for line in (result.stdout + result.stderr).splitlines() if "careval config error" in line]
    assert errors == [
        f"careval config error: config/config.yaml:{len(lines) + 1}: duplicated key 'benchmarks' "
        f"(first at line {first}); YAML would keep only the last"
    ]
