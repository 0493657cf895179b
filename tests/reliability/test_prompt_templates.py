"""Prompt overrides are checked when the config is read: one line naming `benchmarks.<name>.prompt`."""

import pytest

from careval.datasets.definition import BenchmarkDefinitionError
from careval.datasets.registry import REGISTRY, get_benchmark
from careval.tasks.prompts import fill_prompt


@pytest.mark.parametrize(
    "name, prompt, expected",
    [
        (
            "demo_open_qa",
            "You are a doctor. Answer:",
            "benchmarks.demo_open_qa.prompt: no {question} placeholder, so every sample would get the same prompt",
        ),
        (
            "demo_open_qa",
            "Question: {qustion}\nAnswer:",
            "benchmarks.demo_open_qa.prompt: unknown placeholder {qustion} (known: {question}, {context}, {options}, {options:spaced}, {options:list}; a literal brace is '{{' or '}}')",
        ),
        (
            "demo_mcqa",
            "Question: {question.upper}\nAnswer:",
            "benchmarks.demo_mcqa.prompt: unknown placeholder {question.upper} (known: {question}, {context}, {options}, {options:spaced}, {options:list}; a literal brace is '{{' or '}}')",
        ),
        (
            "demo_mcqa",
            "Question: {question!r:>10}",
            "benchmarks.demo_mcqa.prompt: unknown placeholder {question!r:>10} (known: {question}, {context}, {options}, {options:spaced}, {options:list}; a literal brace is '{{' or '}}')",
        ),
        (
            "demo_mcqa",
            "Q {0}: {question}",
            "benchmarks.demo_mcqa.prompt: unknown placeholder {0} (known: {question}, {context}, {options}, {options:spaced}, {options:list}; a literal brace is '{{' or '}}')",
        ),
        (
            "demo_mcqa",
            'JSON like {"q": 1} {question}',
            "benchmarks.demo_mcqa.prompt: unknown placeholder {\"q\": 1} (known: {question}, {context}, {options}, {options:spaced}, {options:list}; a literal brace is '{{' or '}}')",
        ),
        (
            "demo_mcqa",
            "Question: {question} }",
            "benchmarks.demo_mcqa.prompt: Single '}' encountered in format string (a literal brace is '{{' or '}}')",
        ),
        (
            "demo_mcqa",
            "Question: {question}\n{context}\nAnswer:",
            "benchmarks.demo_mcqa.prompt: {context} but the benchmark maps no context field, so it would be empty",
        ),
        (
            "pubmedqa",
            "Question: {question}\nAnswer:",
            "benchmarks.pubmedqa.prompt: no {context} placeholder, so the samples' context is never shown",
        ),
        (
            "medical_text_classification",
            "Text: {question}\nAnswer:",
            "benchmarks.medical_text_classification.prompt: no {options} placeholder, but a classification prompt lists the options",
        ),
        (
            "prescription_easy",
            "Diagnosis: {question}. Prescribe:",
            # the options a prescription prompt lists are the authors' other draw, in the sample's context
            "benchmarks.prescription_easy.prompt: no {context} placeholder, so the samples' context is never shown",
        ),
        (
            "demo_note",
            "{question}\n{options}\nNote:",
            "benchmarks.demo_note.prompt: {options} but open samples have no options, so it would be empty",
        ),
    ],
)
def test_a_bad_prompt_override_is_one_line_naming_the_key(name, prompt, expected):
    with pytest.raises(BenchmarkDefinitionError) as error:
        get_benchmark(name, {"prompt": prompt})
    assert str(error.value) == expected


def test_good_overrides_and_every_catalogue_prompt_pass():
    for name in REGISTRY:
        get_benchmark(name)
    entry = get_benchmark("demo_mcqa", {"prompt": "Q: {question}\nChoices:\n{options}\nLiteral {{braces}}.\nA:"})
    sample = {"question": "q?", "context": None, "options": ["x", "y"]}
    assert fill_prompt(entry.prompt, sample) == "Q: q?\nChoices:\nA. x\nB. y\nLiteral {braces}.\nA:"
    # the authors' two other ways of listing options: lines ending in a space, and a Python list
    spaced = get_benchmark("demo_mcqa", {"prompt": "Q: {question} \nChoices: \n{options:spaced}\n Answer:"})
    assert fill_prompt(spaced.prompt, sample) == "Q: q? \nChoices: \nA. x \nB. y \n Answer:"
    listed = get_benchmark("demo_mcqa", {"prompt": "Q: {question}\nChoices: {options:list}\n Answer:"})
    assert (
        fill_prompt(listed.prompt, {**sample, "options": [" x", "y's"]}) == "Q: q?\nChoices: [' x', \"y's\"]\n Answer:"
    )
