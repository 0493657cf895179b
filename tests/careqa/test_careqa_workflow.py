"""The CareQA sub-workflow with snakemake on the demo exam: plan offline, then build it end to end (slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TARGETS = ["results/careqa/CareQA_en.parquet", "results/careqa/CareQA_en_open.parquet"]


def _workdir(repo: Path, tmp: Path, *, booklet_pdf: bool = False, max_new_tokens: int = 24) -> tuple[Path, dict]:
    """A clone-like copy (Snakefile, workflow, config) whose careqa editions point at the repo's demo exam."""
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["models_dir"] = str(repo / "resources" / "models")
    for edition in config["careqa"]["editions"]:
        for part in ("booklet", "key"):
            edition[part] = str(repo / edition[part])
    if booklet_pdf:
        # The Ministry publishes PDFs: the medicine booklet goes through the PDF path, the others stay text.
        pytest.importorskip("pypdf")
        from careval.careqa.pdf import render_text_pdf

        medicine = config["careqa"]["editions"][0]
        pdf = tmp / "cuadernillo_2024_medicina.pdf"
        render_text_pdf(Path(medicine["booklet"]).read_text(encoding="utf-8"), pdf)
        medicine["booklet"] = str(pdf)
    for step in ("translator", "rephraser"):
        config["careqa"][step]["max_new_tokens"] = max_new_tokens
    work = tmp / "careval"
    work.mkdir()
    shutil.copy(repo / "Snakefile", work / "Snakefile")
    shutil.copytree(repo / "workflow", work / "workflow")
    (work / "config").mkdir()
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return work, config


def _run(args: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    return subprocess.run([SNAKEMAKE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _job_counts(output: str) -> dict[str, int]:
    return {
        line.split()[0]: int(line.split()[1])
        for line in output.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }


def test_careqa_is_planned_on_demand_and_not_part_of_all(repo_root, tmp_path):
    work, config = _workdir(repo_root, tmp_path)
    planned = _run(["-n", "--cores", "2", "careqa"], work, timeout=120)
    assert planned.returncode == 0, planned.stderr[-3000:]
    counts = _job_counts(planned.stdout + planned.stderr)
    n_editions = len(config["careqa"]["editions"])
    assert counts["careqa_acquire"] == n_editions
    for rule in (
        "careqa_parse",
        "careqa_translate",
        "careqa_filter_negative",
        "careqa_rephrase",
        "careqa_rephrase_iteration2",
        "careqa_open",
        "careqa_stage_counts",
    ):
        assert counts[rule] == 1, rule
    assert counts["careqa_validate"] == 2  # iteration 1 and iteration 2
    assert counts["careqa_review_sheet"] == 2  # translation and rephrasing
    everything = _run(["-n", "--cores", "2"], work, timeout=120)
    assert everything.returncode == 0, everything.stderr[-3000:]
    counts = _job_counts(everything.stdout + everything.stderr)
    # the report's CareQA statistics (Table 4, figures 5-7) read shipped files, never the LLM build
    assert counts.pop("careqa_statistics") == 1
    assert not any(rule.startswith("careqa") for rule in counts)


def test_agreement_without_filled_sheets_names_the_folder(repo_root, tmp_path):
    work, config = _workdir(repo_root, tmp_path)
    result = _run(["-n", "--cores", "1", "results/careqa/review/translation/agreement.json"], work, timeout=120)
    assert result.returncode != 0
    folder = config["careqa"]["review"]["filled_sheets"]  # the demo's: resources/demo/careqa_review, not in `work`
    assert f"{folder}/translation/<one filled sheet per reviewer>.csv" in result.stdout + result.stderr


@pytest.mark.slow
def test_careqa_builds_on_the_demo_exam(repo_root, tmp_path, demo_model_dirs):
    work, _ = _workdir(repo_root, tmp_path, booklet_pdf=True)
    result = _run(
        [
            "--cores",
            "2",
            *TARGETS,
            "results/careqa/stage_counts.json",
            "results/careqa/review/translation/sheet.csv",
            "results/careqa/review/rephrasing/sheet.csv",
        ],
        work,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    out = work / "results" / "careqa"
    counts = json.loads((out / "stage_counts.json").read_text())
    stages = counts["stages"]

    # Deterministic stages, counted by hand in resources/demo/careqa/README.md: 15 questions in three
    # editions, medicine q3 annulled in its key, medicine q5 printed with three options.
    assert (stages["parse"]["parsed"], stages["parse"]["annulled"], stages["parse"]["misparsed"]) == (13, 1, 1)
    assert stages["parse"]["editions"]["2024_medicine"]["annulled_questions"] == [3]
    assert list(stages["parse"]["editions"]["2024_medicine"]["misparsed_questions"]) == ["5"]
    spanish = pl.read_parquet(out / "CareQA_es.parquet")
    assert spanish.height == 13
    assert spanish.filter(pl.col("unique_id") == "2024_medicine_2").row(0, named=True)["op3"] == "Amlodipino."

    # LLM stages: whatever the 135M model writes, every question is accounted for.
    english = pl.read_parquet(out / "CareQA_en.parquet")
    translate = stages["translate"]
    assert translate["input"] == 13 and translate["translated"] + translate["translation_failed"] == 13
    assert english.height == translate["translated"] == counts["close_en"]
    assert sum(translate["field_status"].values()) == 13 * 5
    # Translation keeps the key, the metadata and the order of the options' answers.
    joined = english.join(spanish, on="unique_id", suffix="_es")
    assert (joined["cop"] == joined["cop_es"]).all() and (joined["category"] == joined["category_es"]).all()

    negative = stages["negative_filter"]
    # The four Spanish negatives (NO, INCORRECTA, FALSO, excepto) among the translated questions.
    negatives_es = {"2024_medicine_2", "2024_medicine_6", "2024_nursing_2", "2023_pharmacology_2"}
    assert negative["negative_flagged_es"] == len(negatives_es & set(english["unique_id"]))
    assert negative["kept"] == english.height - negative["negative_filtered"] == counts["after_negative_filter"]
    assert negative["negative_filtered"] >= negative["negative_flagged_es"]

    rephrase = stages["rephrase_iteration1"]
    assert rephrase["input"] == negative["kept"]
    for prompt_status in rephrase["rephrasing_status"].values():
        assert sum(prompt_status.values()) == rephrase["input"]
    assert sum(rephrase["selection_status"].values()) == rephrase["input"]
    assert rephrase["selected"] == rephrase["selection_status"].get("ok", 0) == counts["after_rephrasing"]
    assert rephrase["input"] - rephrase["rephrased"] == rephrase["selection_status"].get("no_candidate", 0)

    # Each iteration's chain adds up; iteration 2 takes exactly what iteration 1's validator did not accept.
    one, two = counts["iterations"]["iteration1"], counts["iterations"]["iteration2"]
    for n, chain in ((1, one), (2, two)):
        validate = stages[f"validate_iteration{n}"]
        assert validate["input"] == chain["selected"] == chain["validated"] + chain["rejected"]
        assert sum(validate["validation_status"].values()) == validate["input"]
        assert chain["input"] >= chain["rephrased"] >= chain["selected"] and chain["final"] == chain["validated"]
    assert two["input"] == one["rejected"] and two["selected"] == two["rephrased"]
    assert sum(stages["rephrase_iteration2"]["rephrasing_status"].values()) == two["input"]
    open_set = pl.read_parquet(out / "CareQA_en_open.parquet")
    assert open_set.height == counts["open"] == one["final"] + two["final"] <= rephrase["selected"]
    assert open_set.columns == ["exam_id", "question", "answer", "year", "category", "unique_id", "iteration"]
    assert (open_set["iteration"] == 2).sum() == two["final"]
    assert set(open_set["unique_id"]) <= set(english["unique_id"]) - negatives_es

    translation_review = json.loads((out / "review" / "translation" / "sample.json").read_text())
    assert translation_review["population"] == english.height
    sheet = pl.read_csv(out / "review" / "translation" / "sheet.csv")
    assert sheet.height == translation_review["sample"] and sheet.columns[:3] == ["item_id", "reviewer", "label"]
