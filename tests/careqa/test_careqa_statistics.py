"""CareQA statistics (Table 4, figures 5-7) on the demo exam, against counts made by hand and the tokenizer's own
library; the published and canonical layouts; one-line errors; the plan draws the pages only when configured."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from careval.careqa.statistics import (
    CareqaFileError,
    categories_per_year,
    read_careqa,
    review_correctness,
    statistics_sources,
    table4,
    write_table4,
)

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "resources" / "demo" / "careqa" / "published"
SHEETS = REPO / "resources" / "demo" / "careqa_review"


@pytest.fixture(scope="module")
def closed() -> pl.DataFrame:
    return read_careqa(PUBLISHED / "CareQA_en.jsonl", "closed")


def test_categories_per_year_are_the_hand_counts_of_the_demo_exam(closed):
    # the demo exam (resources/demo/careqa/README.md): 2024 medicine 5 kept questions, 2024 nursing 4, 2023
    # pharmacology 4; the open set: medicine_1/4/7, nursing_1/3, pharmacology_1/3
    open_ = read_careqa(PUBLISHED / "CareQA_en_open.jsonl", "open")
    table = categories_per_year({"closed": closed, "open": open_})
    assert sorted(table.iter_rows()) == sorted(
        [
            ("closed", 2024, "medicine", 5),
            ("closed", 2024, "nursing", 4),
            ("closed", 2023, "pharmacology", 4),
            ("open", 2024, "medicine", 3),
            ("open", 2024, "nursing", 2),
            ("open", 2023, "pharmacology", 2),
        ]
    )


def test_table4_with_whitespace_tokens_matches_a_hand_count(closed):
    rows = {row["category"]: row for row in table4(closed, str.split).iter_rows(named=True)}
    # medicine, questions by hand: 25, 9, 9, 6, 12 words; correct answers: 4 ("Acute inferior myocardial
    # infarction."), 1 (Amlodipine.), 1 (Ferritin.), 4 ("It stimulates hepatic gluconeogenesis."), 2
    assert rows["medicine"]["questions"] == 5
    assert (rows["medicine"]["max_q_tokens"], rows["medicine"]["avg_q_tokens"]) == (25, pytest.approx(61 / 5))
    assert (rows["medicine"]["max_a_tokens"], rows["medicine"]["avg_a_tokens"]) == (4, pytest.approx(12 / 5))
    # pharmacology: questions 13, 11, 7, 7 words; answers 9 ("Inhibition of the H+/K+ ATPase of the parietal
    # cell."), 1, 1, 1; distinct words of the questions and answers, counted one by one: 12 + 5 + 9 + 1 + 4 + 1 + 6 + 1
    pharmacology = rows["pharmacology"]
    assert (pharmacology["max_q_tokens"], pharmacology["avg_q_tokens"]) == (13, pytest.approx(38 / 4))
    assert (pharmacology["max_a_tokens"], pharmacology["avg_a_tokens"]) == (9, pytest.approx(3.0))
    assert pharmacology["vocabulary"] == 39
    assert rows["Total"]["questions"] == 13 and rows["Total"]["max_q_tokens"] == 25


def test_table4_token_counts_match_the_tokenizers_library(closed, demo_model_dirs):
    """The HF tokenizer (transformers) against the tokenizer.json read by `tokenizers` directly."""
    from tokenizers import Tokenizer

    from careval.careqa.statistics import hf_tokenize

    folder = demo_model_dirs["smollm2-135m-instruct"]
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids = [raw.encode(text, add_special_tokens=False).ids for text in closed["question"]]
    answers = [raw.encode(text, add_special_tokens=False).ids for text in closed["answer"]]
    total = table4(closed, hf_tokenize(str(folder))).filter(pl.col("category") == "Total").row(0, named=True)
    assert total["max_q_tokens"] == max(map(len, ids))
    assert total["avg_q_tokens"] == pytest.approx(sum(map(len, ids)) / len(ids))
    assert total["max_a_tokens"] == max(map(len, answers))
    assert total["vocabulary"] == len({t for seq in ids + answers for t in seq})


def test_review_correctness_of_the_demo_sheets_is_the_hand_table():
    sheets = {kind: sorted((SHEETS / kind).glob("*.csv")) for kind in ("translation", "rephrasing")}
    table = review_correctness(sheets)
    got = {
        (r["kind"], r["category"]): (r["items"], r["at_least_two"], r["all_reviewers"])
        for r in table.iter_rows(named=True)
    }
    # resources/demo/careqa_review/README.md
    assert got[("rephrasing", "medicine")] == (3, 1.0, pytest.approx(2 / 3))
    assert got[("rephrasing", "pharmacology")] == (2, 0.5, 0.5)
    assert got[("translation", "nursing")] == (2, 0.5, 0.5)
    assert got[("translation", "pharmacology")] == (2, 1.0, 1.0)
    assert table["at_least_one"].to_list() == [1.0] * 6
    assert review_correctness({}).height == 0


def test_canonical_samples_give_the_same_rows_as_the_published_layout(tmp_path, closed):
    """resources/datasets/careqa_en.parquet (options, 0-based answer, category and year in meta) reads the same."""
    canonical = pl.DataFrame(
        {
            "id": ["a"],
            "question": [closed["question"][0]],
            "options": [["x", closed["answer"][0], "y", "z"]],
            "answer": [1],
            "reference": [None],
            "meta": [json.dumps({"category": "medicine", "year": 2024})],
        }
    )
    path = tmp_path / "careqa_en.parquet"
    canonical.write_parquet(path)
    assert read_careqa(path, "closed").row(0) == closed.row(0)
    open_path = tmp_path / "careqa_open.parquet"
    canonical.with_columns(pl.lit("An answer.").alias("reference")).write_parquet(open_path)
    assert read_careqa(open_path, "open")["answer"].to_list() == ["An answer."]


@pytest.mark.parametrize(
    "line, message",
    [
        (
            '{"question": "q", "op1": "a", "op2": "b", "op3": "c", "op4": "d", "cop": 1, "year": 2024}',
            "row 1: no category",
        ),
        ('{"question": "q", "op1": "a", "cop": 3, "year": 2024, "category": "x"}', "row 1: no answer"),
        ('{"question": "q", "op1": "a", "cop": 1, "year": "later", "category": "x"}', "row 1: year 'later' is not"),
        ("{not json", "line 1: not JSON"),
    ],
)
def test_a_bad_row_is_one_line_naming_file_and_row(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(CareqaFileError) as error:
        read_careqa(path, "closed")
    assert message in str(error.value) and "bad.jsonl" in str(error.value) and "\n" not in str(error.value)


def test_table4_is_written_as_csv_markdown_and_booktabs(tmp_path, closed):
    table = table4(closed, str.split)
    paths = [tmp_path / f"table4_careqa_statistics.{ext}" for ext in ("csv", "md", "tex")]
    write_table4(table, "whitespace", *paths)
    assert pl.read_csv(paths[0]).equals(table)
    markdown = paths[1].read_text().splitlines()
    assert "whitespace tokenizer" in markdown[0] and markdown[2].startswith("| Category | Questions |")
    assert "| medicine | 5 | 25 | 12.2 | 4 | 2.4 |" in markdown[4]
    tex = paths[2].read_text()
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index("Total &") < tex.index(r"\bottomrule")


def test_sources_resolve_benchmarks_files_and_the_build():
    sources = statistics_sources({"closed": "careqa_en", "open": None}, ["careqa_en"], "data", "out/careqa")
    assert sources == {"closed": "data/careqa_en.parquet", "open": "out/careqa/CareQA_en_open.parquet"}
    shipped = statistics_sources({"closed": "resources/demo/careqa/published/CareQA_en.jsonl"}, [], "d", "c")
    assert Path(shipped["closed"]).is_file()


def test_the_plan_draws_the_careqa_pages_only_when_a_tokenizer_is_named_and_figure_7_where_sheets_are_configured():
    from careval.config import ConfigError
    from careval.plan import build_plan

    demo = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    names = build_plan(copy.deepcopy(demo)).analysis.figure_names()
    assert [n for n in names if n.startswith("careqa_")] == [
        "careqa_table4",
        "careqa_categories_closed",
        "careqa_categories_open",
        "careqa_review",
    ]
    off = copy.deepcopy(demo)
    del off["careqa"]["statistics"]
    assert not [n for n in build_plan(off).analysis.figure_names() if n.startswith("careqa_")]
    # figure 7 follows the config, not the disk: a configured folder without sheets yet plans it (its page says so)
    no_sheets = copy.deepcopy(demo)
    no_sheets["careqa"]["review"]["filled_sheets"] = "resources/no_such_folder"
    planned = build_plan(no_sheets).analysis
    assert "careqa_review" in planned.figure_names()
    assert planned.report_job.review_sheets == "resources/no_such_folder"
    unset = copy.deepcopy(demo)
    del unset["careqa"]["review"]["filled_sheets"]  # the schema's default: no human review
    assert "careqa_review" not in build_plan(unset).analysis.figure_names()
    assert build_plan(unset).analysis.report_job.review_sheets is None
    paper = build_plan(yaml.safe_load((REPO / "config" / "paper.yaml").read_text())).analysis
    assert "careqa_review" in paper.figure_names() and paper.report_job.review_sheets == "resources/careqa_review"
    wrong = copy.deepcopy(demo)
    wrong["careqa"]["statistics"]["tokenizer"] = "no-such-model"
    with pytest.raises(ConfigError, match=re.escape("careqa.statistics.tokenizer: 'no-such-model' is not a key")):
        build_plan(wrong)
