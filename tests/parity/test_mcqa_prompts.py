"""careval's MCQA requests against lm-eval's own task files, on hand-written rows (fast, no model).

Each row is written twice: in the layout of careval's catalogue source (normalised by careval) and
in the fields lm-eval's doc_to_text reads. The context careval sends and the continuations it
scores must be lm-eval's `description + doc_to_text(doc)` and `target_delimiter + choice`.
"""

from __future__ import annotations

import pytest
from lm_eval_reference import lm_eval_request, lm_eval_target

from careval.datasets.normalise import normalise
from careval.datasets.registry import get_benchmark
from careval.inference import loglik_requests

pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

QUESTION = "A 23-year-old woman has fever and dysuria. Which organism is most likely?"
OPTIONS = ["Escherichia coli", "Staphylococcus saprophyticus", "Proteus mirabilis", "Klebsiella pneumoniae"]

# benchmark -> (row in careval's source layout, the same row in lm-eval's fields)
ROWS = {
    "medqa": (
        {"question": QUESTION, "options": dict(zip("ABCD", OPTIONS)), "answer_idx": "B"},
        {"sent1": QUESTION, **{f"ending{i}": o for i, o in enumerate(OPTIONS)}, "label": 1},
    ),
    "medmcqa": (
        {"id": "m1", "question": QUESTION, **dict(zip(["opa", "opb", "opc", "opd"], OPTIONS)), "cop": 1},
        {"question": QUESTION, **dict(zip(["opa", "opb", "opc", "opd"], OPTIONS)), "cop": 1},
    ),
    "mmlu_anatomy": (
        {"question": QUESTION, "choices": OPTIONS, "answer": 1},
        {"question": QUESTION, "choices": OPTIONS, "answer": 1},
    ),
    "careqa_en": (
        {"unique_id": "c1", "question": QUESTION, **dict(zip(["op1", "op2", "op3", "op4"], OPTIONS)), "cop": 2},
        {"question": QUESTION, **dict(zip(["op1", "op2", "op3", "op4"], OPTIONS)), "cop": 2},
    ),
    "careqa_es": (
        {
            "unique_id": "c1",
            "question": "¿Cuál es el microorganismo más probable?",
            **dict(zip(["op1", "op2", "op3", "op4"], OPTIONS)),
            "cop": 2,
        },
        {
            "question": "¿Cuál es el microorganismo más probable?",
            **dict(zip(["op1", "op2", "op3", "op4"], OPTIONS)),
            "cop": 2,
        },
    ),
    "pubmedqa": (
        {
            "pubid": "1",
            "QUESTION": "Is aspirin protective?",
            "CONTEXTS": ["Background text.", "Results text."],
            "final_decision": "maybe",
        },
        {
            "QUESTION": "Is aspirin protective?",
            "CONTEXTS": ["Background text.", "Results text."],
            "final_decision": "maybe",
        },
    ),
    "headqa": (
        {
            "name": "Cuaderno_2016_1_B",
            "qid": "7",
            "qtext": QUESTION,
            "ra": 2,
            "answers": [{"aid": i + 1, "atext": o} for i, o in enumerate(OPTIONS)],
        },
        {"qtext": QUESTION, "ra": 2, "answers": [{"aid": i + 1, "atext": o} for i, o in enumerate(OPTIONS)]},
    ),
}


@pytest.mark.parametrize("benchmark", sorted(ROWS))
def test_catalogue_prompt_and_choices_are_lm_evals(benchmark):
    source_row, lm_eval_doc = ROWS[benchmark]
    entry = get_benchmark(benchmark)
    samples = normalise([source_row], entry)
    requests = loglik_requests(samples, entry)
    context, continuations = lm_eval_request(benchmark, lm_eval_doc)
    assert requests["context"].to_list() == [context] * len(continuations)
    assert requests["continuation"].to_list() == continuations
    assert samples["answer"][0] == lm_eval_target(benchmark, lm_eval_doc)


def test_the_styles_the_authors_files_use():
    # the letters where lm-eval's doc_to_choice is A..D, the option text where it is the answers
    letters = {name: get_benchmark(name).mcqa_style == "letters" for name in ROWS}
    assert letters == {
        "medqa": True,
        "medmcqa": True,
        "mmlu_anatomy": True,
        "careqa_en": True,
        "careqa_es": True,
        "pubmedqa": False,
        "headqa": False,
    }


def test_mmlu_letters_prompt_by_hand():
    samples = normalise([ROWS["mmlu_anatomy"][0]], get_benchmark("mmlu_clinical_knowledge"))
    requests = loglik_requests(samples, get_benchmark("mmlu_clinical_knowledge"))
    assert requests["context"][0] == (
        "The following are multiple choice questions (with answers) about clinical knowledge.\n\n"
        f"{QUESTION}\nA. Escherichia coli\nB. Staphylococcus saprophyticus\nC. Proteus mirabilis\n"
        "D. Klebsiella pneumoniae\nAnswer:"
    )
    assert requests["continuation"].to_list() == [" A", " B", " C", " D"]


def test_cloze_override_scores_the_option_text_after_the_cloze_prompt():
    entry = get_benchmark("medmcqa", {"mcqa_style": "cloze"})
    samples = normalise([ROWS["medmcqa"][0]], entry)
    requests = loglik_requests(samples, entry)
    assert requests["context"].to_list() == [f"Question: {QUESTION}\nAnswer:"] * 4
    assert requests["continuation"].to_list() == [" " + option for option in OPTIONS]
