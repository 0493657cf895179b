"""The catalogue: every dataset of the paper's Table 1 is an entry, prompts fill, and paper.yaml plans all of them."""

import pytest

from careval.datasets import CATALOGUE, REGISTRY, get_benchmark, normalise
from careval.datasets.benchmark import CHOICE_TASKS, HFSource, LocalSource
from careval.tasks.prompts import fill_prompt

# Table 1 of the paper, as benchmark names (MMLU: its six medical subjects; prescriptions: easy and hard).
TABLE_1 = {
    "mcqa": {
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
        "careqa_es",
    },
    "prescription": {"prescription_easy", "prescription_hard"},
    "classification": {"medical_text_classification", "medical_transcriptions"},
    "extraction": {"biored"},
    "open": {
        "meddialog_raw",
        "mediqa2019",
        "careqa_open",
        "medtext",
        "mts_dialog",
        "aci_bench",
        "olaph",
        "mimic_iii_hospital_course",
        "meddialog_qsumm",
        "meqsum",
    },
}


def test_every_table_1_dataset_is_an_entry_of_its_task():
    for task, names in TABLE_1.items():
        assert {name: REGISTRY[name].task for name in names} == dict.fromkeys(names, task)


def test_paper_config_lists_every_table_1_benchmark(repo_root):
    from careval.config import load_config

    config = load_config(repo_root / "config" / "paper.yaml")
    assert set(config["benchmarks"]) == set().union(*TABLE_1.values())
    assert len(config["models"]) == 21
    assert {entry["size"] for entry in config["models"].values()} == set(config["model_sizes"]) == {"small", "medium"}
    assert all(
        entry["source"].startswith("hf:") and entry["chat_template"] is False for entry in config["models"].values()
    )


def test_real_samples_config_is_valid(repo_root, shared_data):
    from careval.config import load_config

    config = load_config(repo_root / "config" / "real_samples.yaml")
    for name, overrides in config["benchmarks"].items():
        entry = get_benchmark(name, overrides)
        assert (repo_root / entry.source.path).resolve().is_relative_to(shared_data.resolve())


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_prompt_fills_from_a_canonical_sample(name):
    entry = REGISTRY[name]
    sample = {"question": "Q?", "context": "C.", "options": ["x", "y"] if entry.task in CHOICE_TASKS else None}
    prompt = fill_prompt(entry.prompt, sample)
    assert "Q?" in prompt and "{" not in prompt.replace("{}", "")
    assert isinstance(entry.source, (HFSource, LocalSource))
    for layout in CATALOGUE[name].get("formats", {}):
        assert get_benchmark(name, {"format": layout}).task == entry.task


def test_careqa_close_entry_reads_the_hub_layout():
    # CareQA has no sample here; a row in the layout of HPAI-BSC/CareQA (op1..op4, 1-based cop), by hand
    row = {
        "exam_id": 36,
        "question": "Which is incorrect?",
        "op1": "a",
        "op2": "b",
        "op3": "c",
        "op4": "d",
        "cop": 4,
        "year": 2024,
        "category": "Medicine",
        "unique_id": "5636d1af",
    }
    for name in ("careqa_en", "careqa_es"):
        sample = normalise([row], REGISTRY[name]).row(0, named=True)
        assert sample["options"] == ["a", "b", "c", "d"] and sample["answer"] == 3 and sample["id"] == "5636d1af"
    sample = normalise([{"question": "What is X?", "answer": "Y.", "unique_id": "u1"}], REGISTRY["careqa_open"]).row(
        0, named=True
    )
    assert sample["reference"] == "Y."
