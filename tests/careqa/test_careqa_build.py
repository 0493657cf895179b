"""The CareQA build stages as library calls, with a scripted backend whose every reply is known in advance."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest

from careval.backends.base import Sampling
from careval.careqa.acquire import AcquireError, acquire
from careval.careqa.build import merge_stage_counts, parse_editions
from careval.careqa.layout import COLUMNS
from careval.careqa.rephrase import (
    REPHRASE_PROMPTS,
    UNIQUE_REPHRASE_PROMPT,
    VALIDATION_PROMPT,
    build_iteration1,
    build_iteration2,
    build_open,
    build_screened,
    build_validation,
    parse_choice,
    parse_rephrasing,
    parse_verdict,
)
from careval.careqa.review import export_review, sample_size, write_agreement
from careval.careqa.translate import TRANSLATION_PROMPT, translate_careqa

DEMO_EDITIONS = [
    {
        "year": 2024,
        "category": "medicine",
        "booklet": "cuadernillo_2024_medicina.txt",
        "key": "respuestas_2024_medicina.txt",
        "ignore": ["CUADERNO DE EXAMEN .*"],
    },
    {
        "year": 2024,
        "category": "nursing",
        "booklet": "cuadernillo_2024_enfermeria.txt",
        "key": "respuestas_2024_enfermeria.txt",
    },
    {
        "year": 2023,
        "category": "pharmacology",
        "booklet": "cuadernillo_2023_farmacia.txt",
        "key": "respuestas_2023_farmacia.txt",
    },
]


class ScriptedBackend:
    """Replies with reply(prompt); records the prompts so a test can check what was asked."""

    name = "scripted"
    max_length = 4096

    def __init__(self, reply):
        self.reply = reply
        self.prompts: list[str] = []

    def generate(self, prompts, sampling, instruction=None):
        self.prompts.extend(prompts)
        return [self.reply(p) for p in prompts]


def _source(prompt: str) -> str:
    return prompt.split("Spanish: ", 1)[1].rsplit("\nEnglish:", 1)[0]


@pytest.fixture
def spanish(tmp_path, repo_root):
    demo = repo_root / "resources" / "demo" / "careqa"
    report = parse_editions(
        DEMO_EDITIONS,
        [demo / e["booklet"] for e in DEMO_EDITIONS],
        [demo / e["key"] for e in DEMO_EDITIONS],
        tmp_path / "es.parquet",
        tmp_path / "parse.json",
    )
    assert (report["parsed"], report["annulled"], report["misparsed"]) == (13, 1, 1)
    return tmp_path / "es.parquet"


def test_translation_keeps_options_and_key_and_counts_failures(tmp_path, spanish):
    # "EN<text>" for every field, except an empty reply for the third option of nursing question 3.
    def reply(prompt):
        text = _source(prompt)
        return "" if text == "Escala de Barthel." else f"English: EN<{text}>\n\nI hope this helps!"

    backend = ScriptedBackend(reply)
    report = translate_careqa(
        spanish, backend, Sampling(), tmp_path / "en.parquet", tmp_path / "audit.parquet", tmp_path / "translate.json"
    )
    assert report == {
        "stage": "translate",
        "model": "scripted",
        "input": 13,
        "translated": 12,
        "translation_failed": 1,
        "field_status": {"empty_output": 1, "ok": 64},
    }
    assert backend.prompts[0] == TRANSLATION_PROMPT.format(text=pl.read_parquet(spanish)["question"][0])
    es = pl.read_parquet(spanish)
    en = pl.read_parquet(tmp_path / "en.parquet")
    assert tuple(en.columns) == COLUMNS
    assert "2024_nursing_3" not in set(en["unique_id"])
    row_es = es.filter(pl.col("unique_id") == "2024_medicine_2").row(0, named=True)
    row_en = en.filter(pl.col("unique_id") == "2024_medicine_2").row(0, named=True)
    # The label and the chatter after the blank line are cut; options keep their positions, cop its value.
    assert [row_en[f"op{i}"] for i in range(1, 5)] == [f"EN<{row_es[f'op{i}']}>" for i in range(1, 5)]
    assert (row_en["cop"], row_en["year"], row_en["category"], row_en["exam_id"]) == (3, 2024, "medicine", 1)
    audit = pl.read_parquet(tmp_path / "audit.parquet")
    assert audit.filter(pl.col("status") == "empty_output")["unique_id"].to_list() == ["2024_nursing_3"]


@pytest.mark.parametrize(
    "output, expected",
    [
        ("Question: What causes X?\nAnswer: Y.", ("What causes X?", "Y.", "ok")),
        (
            "**Question:** What causes X\nand Z?\n**Answer:** Y.\n\nNote: rephrased.",
            ("What causes X and Z?", "Y.", "ok"),
        ),
        ("SKIP", (None, None, "skipped")),
        ("  skip - needs options", (None, None, "skipped")),
        ("   ", (None, None, "empty_output")),
        ("Question: only a question", (None, None, "parse_error")),
        ("The answer is Y.", (None, None, "parse_error")),
    ],
)
def test_parse_rephrasing(output, expected):
    assert parse_rephrasing(output) == expected


def test_parse_choice_and_verdict():
    assert parse_choice("Candidate 2 is better.", (1, 2)) == (2, "ok")
    assert parse_choice("NONE of them", (1, 2)) == (None, "none")
    assert parse_choice("2", (1,)) == (None, "parse_error")  # candidate 2 was not offered
    assert parse_choice("the first", (1, 2)) == (None, "parse_error")
    assert parse_choice("", (1, 2)) == (None, "empty_output")
    assert parse_verdict("Yes, only that answer.") == (True, "ok")
    assert parse_verdict("NO.") == (False, "ok")
    assert parse_verdict("Maybe") == (None, "parse_error")
    assert parse_verdict("Nothing else") == (None, "parse_error")  # "No" must be a word of its own


def test_open_stages_count_every_question(tmp_path, spanish):
    # Identity-like translation, so the English negatives are the Spanish ones.
    translate_careqa(
        spanish,
        ScriptedBackend(_source),
        Sampling(),
        tmp_path / "en.parquet",
        tmp_path / "t_audit.parquet",
        tmp_path / "translate.json",
    )
    negative = build_screened(tmp_path / "en.parquet", spanish, tmp_path / "screened.parquet", tmp_path / "neg.json")
    assert negative == {
        "stage": "negative_filter",
        "input": 13,
        "negative_filtered": 4,
        "negative_flagged_es": 4,
        "negative_flagged_en_only": 0,
        "kept": 9,
    }

    # Scripted rephraser, by question: medicine 1 -> both prompts parse, selector picks 2; medicine 4 ->
    # prompt 1 SKIPs, prompt 2 parses, selector says NONE; nursing 1 -> both garbage (no candidate);
    # everything else -> prompt 1 parses, prompt 2 garbage, selector picks 1.
    # Iteration-1 validator: "NO" for pharmacology 3 (paracetamol) and nursing 4 (compresiones), an unparseable
    # reply for pharmacology 4 (aminoglucósidos), YES otherwise.
    # Iteration-2 rephraser (its own prompt): SKIP for nursing 4, "unique <stem>" otherwise; its validator: YES
    # for pharmacology 3, NO for pharmacology 4.
    def reply(prompt):
        if prompt.startswith("Below is a multiple-choice"):
            if "¿Cuál es el principal reservorio" in prompt:
                return "NONE"
            return "2" if "Candidate 2" in prompt else "Candidate 1."
        if prompt.startswith("Below is an open-ended"):
            if "Question: unique " in prompt:
                return "YES" if "paracetamol" in prompt else "NO"
            if "paracetamol" in prompt or "compresiones" in prompt:
                return "NO"
            return "I cannot tell." if "aminoglucósidos" in prompt else "YES"
        if prompt.startswith("A previous open-ended rewrite"):
            stem = prompt.split("Multiple-choice question: ", 1)[1].split("\n", 1)[0]
            return "SKIP" if "compresiones" in stem else f"Question: unique {stem}\nAnswer: U"
        first = prompt.startswith(REPHRASE_PROMPTS[0][:30])
        stem = prompt.split("question: " if first else "Exam item: ", 1)[1].split("\n", 1)[0]
        if "intramuscular" in stem:
            return "???"
        if "reservorio" in stem:
            return "SKIP" if first else f"Question: open {stem}\nAnswer: B"
        if "Varón de 58" in stem or first:
            return f"Question: open{1 if first else 2} {stem}\nAnswer: A{1 if first else 2}"
        return "garbage"

    backend = ScriptedBackend(reply)
    sampling = Sampling(max_new_tokens=64)
    iteration1 = build_iteration1(
        tmp_path / "en.parquet",
        tmp_path / "screened.parquet",
        backend,
        sampling,
        tmp_path / "rephrasings1.parquet",
        tmp_path / "rephrase1.json",
    )
    assert iteration1["input"] == 9
    assert iteration1["rephrasing_status"] == {
        "prompt_1": {"ok": 7, "skipped": 1, "parse_error": 1},
        "prompt_2": {"ok": 2, "parse_error": 7},
    }
    assert iteration1["selection_status"] == {"ok": 7, "none": 1, "no_candidate": 1}
    assert (iteration1["rephrased"], iteration1["selected"]) == (8, 7)
    audit = pl.read_parquet(tmp_path / "rephrasings1.parquet")
    chosen = audit.filter(pl.col("unique_id") == "2024_medicine_1").row(0, named=True)
    assert chosen["choice"] == 2 and chosen["open_question"].startswith("open2 ") and chosen["open_answer"] == "A2"
    # A question whose prompts both failed is never put to the selector.
    assert sum("Candidate" in p and "intramuscular" in p for p in backend.prompts) == 0

    validation1 = build_validation(
        tmp_path / "rephrasings1.parquet",
        backend,
        sampling,
        1,
        tmp_path / "validation1.parquet",
        tmp_path / "validate1.json",
    )
    assert validation1 == {
        "stage": "validate_iteration1",
        "model": "scripted",
        "input": 7,
        "validation_status": {"ok": 6, "parse_error": 1},
        "validated": 4,
        "rejected_multiple_answers": 2,
        "rejected_no_verdict": 1,
    }

    asked_before = len(backend.prompts)
    iteration2 = build_iteration2(
        tmp_path / "en.parquet",
        tmp_path / "validation1.parquet",
        backend,
        sampling,
        tmp_path / "rephrasings2.parquet",
        tmp_path / "rephrase2.json",
    )
    assert iteration2 == {
        "stage": "rephrase_iteration2",
        "model": "scripted",
        "input": 3,
        "input_status": {"multiple_answers": 2, "no_verdict": 1},
        "rephrasing_status": {"ok": 2, "skipped": 1},
        "rephrased": 2,
    }
    # Only the three rejected pairs are rephrased again, each with the iteration-2 prompt, which shows the pair
    # iteration 1 failed with; nothing validated in iteration 1, nothing it never selected, is re-asked.
    asked = backend.prompts[asked_before:]
    assert len(asked) == 3 and all(p.startswith("A previous open-ended rewrite") for p in asked)
    english = pl.read_parquet(tmp_path / "en.parquet")
    paracetamol = english.filter(pl.col("unique_id") == "2023_pharmacology_3").row(0, named=True)
    # In CareQA_en order: nursing 4, pharmacology 3, pharmacology 4.
    assert asked[1] == UNIQUE_REPHRASE_PROMPT.format(
        **paracetamol,
        answer="N-acetilcisteína.",
        previous_question=f"open1 {paracetamol['question']}",
        previous_answer="A1",
    )
    assert "compresiones" in asked[0] and "aminoglucósidos" in asked[2]
    for once in ("Varón de 58", "neumonía", "omeprazol", "reservorio", "intramuscular", "Glasgow"):
        assert not any(once in p for p in asked), once

    validation2 = build_validation(
        tmp_path / "rephrasings2.parquet",
        backend,
        sampling,
        2,
        tmp_path / "validation2.parquet",
        tmp_path / "validate2.json",
    )
    assert validation2 == {
        "stage": "validate_iteration2",
        "model": "scripted",
        "input": 2,
        "validation_status": {"ok": 2},
        "validated": 1,
        "rejected_multiple_answers": 1,
        "rejected_no_verdict": 0,
    }
    # The validator saw the iteration-2 pair of pharmacology 3, not its first one again.
    assert backend.prompts[-2] == VALIDATION_PROMPT.format(question=f"unique {paracetamol['question']}", answer="U")

    final = build_open(
        tmp_path / "en.parquet",
        [tmp_path / "validation1.parquet", tmp_path / "validation2.parquet"],
        tmp_path / "open.parquet",
        tmp_path / "open.json",
    )
    assert final == {"stage": "open", "per_iteration": {"iteration1": 4, "iteration2": 1}, "open": 5}
    open_set = pl.read_parquet(tmp_path / "open.parquet")
    # In CareQA_en order, each pair with its iteration.
    assert open_set.select("unique_id", "iteration").rows() == [
        ("2024_medicine_1", 1),
        ("2024_medicine_7", 1),
        ("2024_nursing_3", 1),
        ("2023_pharmacology_1", 1),
        ("2023_pharmacology_3", 2),
    ]
    assert open_set.columns == ["exam_id", "question", "answer", "year", "category", "unique_id", "iteration"]
    assert open_set.filter(pl.col("unique_id") == "2023_pharmacology_3").row(0, named=True)["answer"] == "U"
    assert open_set.filter(pl.col("unique_id") == "2024_nursing_3")["category"].to_list() == ["nursing"]

    counts = merge_stage_counts(
        [
            tmp_path / n
            for n in (
                "parse.json",
                "translate.json",
                "neg.json",
                "rephrase1.json",
                "validate1.json",
                "rephrase2.json",
                "validate2.json",
                "open.json",
            )
        ],
        tmp_path / "stage_counts.json",
    )
    assert [counts[k] for k in ("close_es", "close_en", "after_negative_filter", "after_rephrasing", "open")] == [
        13,
        13,
        9,
        7,
        5,
    ]
    # By hand, from the script above.
    assert counts["iterations"] == {
        "iteration1": {"input": 9, "rephrased": 8, "selected": 7, "validated": 4, "rejected": 3, "final": 4},
        "iteration2": {"input": 3, "rephrased": 2, "selected": 2, "validated": 1, "rejected": 1, "final": 1},
    }
    assert json.loads((tmp_path / "stage_counts.json").read_text())["iterations"] == counts["iterations"]

    # Review sheets: every translated question is in a 13-item population; at 95% / 5% all 13 are drawn.
    summary = export_review(
        "translation",
        tmp_path / "en.parquet",
        spanish,
        tmp_path / "open.parquet",
        {"confidence": 0.95, "margin": 0.05, "seed": 1},
        tmp_path / "sheet.csv",
        tmp_path / "sample.json",
    )
    assert summary["population"] == 13 and summary["sample"] == sample_size(13) == 13
    assert summary["per_category"] == {"medicine": 5, "nursing": 4, "pharmacology": 4}
    rephrasing = export_review(
        "rephrasing",
        tmp_path / "en.parquet",
        spanish,
        tmp_path / "open.parquet",
        {"margin": 0.3, "seed": 1},
        tmp_path / "r_sheet.csv",
        tmp_path / "r_sample.json",
    )
    # By hand: n0 = 1.95996^2 * 0.25 / 0.09 = 10.67; 10.67 / (1 + 9.67 / 5) = 3.64 -> 4 of the 5 open pairs.
    assert rephrasing["sample"] == 4
    with open(tmp_path / "r_sheet.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and all(r["reviewer"] == r["label"] == "" for r in rows)
    assert {"open_question", "open_answer", "correct_answer"} <= set(rows[0])
    # An empty population (the demo's tiny rephraser may keep nothing) still gives a sheet with its header.
    empty = pl.DataFrame(schema=pl.read_parquet(tmp_path / "open.parquet").schema)
    empty.write_parquet(tmp_path / "empty_open.parquet")
    nothing = export_review(
        "rephrasing",
        tmp_path / "en.parquet",
        spanish,
        tmp_path / "empty_open.parquet",
        {},
        tmp_path / "e_sheet.csv",
        tmp_path / "e_sample.json",
    )
    assert (nothing["population"], nothing["sample"]) == (0, 0)
    assert (tmp_path / "e_sheet.csv").read_text().splitlines() == [
        "item_id,reviewer,label,category,close_question,correct_answer,open_question,open_answer"
    ]


def test_merge_stage_counts_names_a_missing_stage(tmp_path):
    (tmp_path / "parse.json").write_text(json.dumps({"stage": "parse", "parsed": 1}))
    with pytest.raises(ValueError, match="no report for translate, negative_filter"):
        merge_stage_counts([tmp_path / "parse.json"], tmp_path / "out.json")


def test_open_set_refuses_a_pair_validated_in_both_iterations(tmp_path, spanish):
    schema = {"unique_id": pl.String, "open_question": pl.String, "open_answer": pl.String, "unique_answer": pl.Boolean}
    for n in (1, 2):
        pl.DataFrame(
            {
                "unique_id": ["2024_medicine_1"],
                "open_question": [f"q{n}"],
                "open_answer": ["a"],
                "unique_answer": [True],
            },
            schema=schema,
        ).write_parquet(tmp_path / f"v{n}.parquet")
    with pytest.raises(ValueError, match="2024_medicine_1 is validated in two iterations"):
        build_open(
            spanish,
            [tmp_path / "v1.parquet", tmp_path / "v2.parquet"],
            tmp_path / "open.parquet",
            tmp_path / "open.json",
        )


def test_agreement_from_filled_sheets_per_category(tmp_path):
    # Three reviewers' copies of a 4-item sheet. Correct votes per item: m1 3/3, m2 2/3, n1 1/3, n2 0/3.
    votes = {
        "ana": ["correct", "correct", "correct", "incorrect"],
        "ben": ["correct", "correct", "incorrect", "incorrect"],
        "cai": ["correct", "incorrect", "incorrect", "incorrect"],
    }
    items = [("m1", "medicine"), ("m2", "medicine"), ("n1", "nursing"), ("n2", "nursing")]
    paths = []
    for reviewer, labels in votes.items():
        path = tmp_path / f"{reviewer}.csv"
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["item_id", "reviewer", "label", "category", "english"])
            for (item, category), label in zip(items, labels):
                writer.writerow([item, reviewer, label, category, "text"])
        paths.append(path)
    result = write_agreement(paths, tmp_path / "agreement.json")
    # Overall: >=1 correct 3/4, >=2 correct 2/4, all three 1/4, unanimous (m1 and n2) 2/4.
    assert result["overall"] == {
        "n_items": 4,
        "at_least_one": 0.75,
        "at_least_two": 0.5,
        "all_reviewers": 0.25,
        "agreement": 0.5,
    }
    assert result["per_category"]["medicine"] == {
        "n_items": 2,
        "at_least_one": 1.0,
        "at_least_two": 1.0,
        "all_reviewers": 0.5,
        "agreement": 0.5,
    }
    assert result["per_category"]["nursing"] == {
        "n_items": 2,
        "at_least_one": 0.5,
        "at_least_two": 0.0,
        "all_reviewers": 0.0,
        "agreement": 0.5,
    }
    assert json.loads((tmp_path / "agreement.json").read_text())["overall"] == result["overall"]


def test_acquire_local_copy_and_clear_errors(tmp_path):
    source = tmp_path / "key.txt"
    source.write_text("1 2\n")
    assert acquire(str(source), tmp_path / "out" / "answer_key").read_text() == "1 2\n"
    with pytest.raises(AcquireError, match=r"missing\.pdf: no such local file"):
        acquire(str(tmp_path / "missing.pdf"), tmp_path / "out" / "booklet")
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(AcquireError, match="empty document"):
        acquire(str(tmp_path / "empty.txt"), tmp_path / "out" / "booklet")
    assert not list((tmp_path / "out").glob("*.part"))


def test_acquire_downloads_and_reports_http_errors(tmp_path):
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "Cuaderno_2024_M_0_C.pdf").write_bytes(b"%PDF-1.4 booklet")
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "served"))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        got = acquire(f"{base}/Cuaderno_2024_M_0_C.pdf", tmp_path / "raw" / "booklet")
        assert got.read_bytes() == b"%PDF-1.4 booklet"
        with pytest.raises(AcquireError, match=r"nope\.pdf: download failed with HTTP 404") as caught:
            acquire(f"{base}/nope.pdf", tmp_path / "raw" / "answer_key")
        assert "\n" not in str(caught.value)
        assert not (tmp_path / "raw" / "answer_key").exists()
    finally:
        server.shutdown()
        server.server_close()


def test_built_parquet_reads_as_the_careqa_benchmarks(tmp_path, spanish):
    from careval.datasets.loaders import read_source
    from careval.datasets.normalise import normalise
    from careval.datasets.registry import get_benchmark
    from careval.schemas import DATASET_SCHEMA

    translate_careqa(
        spanish,
        ScriptedBackend(lambda p: f"EN {_source(p)}"),
        Sampling(),
        tmp_path / "en.parquet",
        tmp_path / "audit.parquet",
        tmp_path / "translate.json",
    )
    # As the build writes it: the published columns plus the iteration each pair comes from.
    open_set = pl.DataFrame(
        {
            "exam_id": [1],
            "question": ["What is the iron store?"],
            "answer": ["Ferritin."],
            "year": [2024],
            "category": ["medicine"],
            "unique_id": ["2024_medicine_4"],
            "iteration": [2],
        }
    )
    open_set.write_parquet(tmp_path / "open.parquet")
    for name, path, n in [
        ("careqa_en", tmp_path / "en.parquet", 13),
        ("careqa_es", spanish, 13),
        ("careqa_open", tmp_path / "open.parquet", 1),
    ]:
        entry = get_benchmark(name, {"path": str(path)})
        samples = normalise(read_source(entry.source), entry)
        assert samples.height == n and dict(samples.schema) == dict(DATASET_SCHEMA)
        if name == "careqa_open":
            assert samples.row(0, named=True)["reference"] == "Ferritin."
            continue
        # The answer index is 0-based in the canonical schema: cop 3 (Amlodipino) -> 2.
        row = samples.filter(pl.col("id") == "2024_medicine_2").row(0, named=True)
        assert row["answer"] == 2 and row["options"][2].endswith("Amlodipino.")
        assert row["question"].endswith("¿Cuál de los siguientes fármacos NO es un betabloqueante?")


def test_careqa_llms_from_config(tmp_path):
    from careval.careqa.llm import llm_sampling
    from careval.config import ConfigError, load_schema, prepare_config
    from careval.plan import build_plan

    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text("{}")  # a model folder (the plan checks no more of it)
    models = {"tiny": {"source": f"local:{tmp_path / 'tiny'}", "chat_template": True}}
    base = {"models": models, "benchmarks": {"demo_mcqa": None}}
    plan = build_plan(
        {
            **base,
            "careqa": {
                "translator": {"model": "tiny", "system_prompt": "Translate."},
                "rephraser": {"endpoint": {"model": "gpt-4", "base_url": "http://host/v1"}},
            },
        }
    )
    spec = plan.careqa_llms["translator"]
    assert (spec.name, spec.backend, Path(spec.path)) == ("tiny", "hf", tmp_path / "tiny")
    assert spec.chat_template is True and spec.system_prompt == "Translate."
    endpoint = plan.careqa_llms["rephraser"]
    assert (endpoint.backend, endpoint.path, endpoint.endpoint["base_url"]) == ("openai", "gpt-4", "http://host/v1")
    with pytest.raises(ConfigError, match=r"careqa.rephraser.model: 'missing' is not a key of `models`"):
        build_plan({**base, "careqa": {"rephraser": {"model": "missing"}}})
    step = plan.config["careqa"]["translator"]
    assert llm_sampling(step) == Sampling(max_new_tokens=256, temperature=0.0, seed=1234)

    # The schema fills the step defaults and refuses a step naming both a model and an endpoint.
    base = {"models": models, "benchmarks": {"demo_mcqa": None}}
    filled = prepare_config({**base, "careqa": {"translator": {"endpoint": {"model": "gpt-4"}}}}, load_schema())
    assert filled["careqa"]["translator"]["endpoint"]["api_key_env"] == "OPENAI_API_KEY"
    assert filled["careqa"]["review"] == {
        "confidence": 0.95,
        "margin": 0.05,
        "seed": 0,
        "min_reviewers": 3,
        "filled_sheets": None,  # no human review unless a folder is configured (config/paper.yaml names one)
    }
    with pytest.raises(ConfigError, match=r"careqa\.translator"):
        prepare_config(
            {**base, "careqa": {"translator": {"model": "tiny", "endpoint": {"model": "gpt-4"}}}}, load_schema()
        )
    with pytest.raises(ConfigError, match=r"careqa\.editions\.0"):
        prepare_config(
            {**base, "careqa": {"editions": [{"year": 2024, "category": "surgery", "booklet": "b", "key": "k"}]}},
            load_schema(),
        )
