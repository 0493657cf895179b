"""Fill a benchmark's prompt template from a canonical sample, and check a template before any model is loaded."""

from __future__ import annotations

import string

# Every placeholder a template may use; fill_prompt fills exactly these.
PLACEHOLDERS = ("question", "context", "options")
# How {options} may be written: "{options}" lettered lines "A. ..."; "{options:spaced}" the same lines
# each ending in a space (the authors' "A. {} \n" in med_text_classification_easy and med_prescriptions);
# "{options:list}" the options as a Python list (the authors' MTSamples prompt formats its list of choices).
OPTIONS_FORMATS = ("", "spaced", "list")
# Tasks whose prompt must list the options: the paper's (lm-eval's) classification prompts show the
# choices; without them the model is asked a different question. (Prescription prompts list the
# authors' other draw of options, which the transform puts in {context}: tasks/prescription.py.)
OPTIONS_LISTED_TASKS = ("classification",)


class PromptTemplateError(ValueError):
    """A prompt template that would fill wrongly; one line naming the config key."""


def render_options(options: list[str] | None, spaced: bool = False) -> str:
    """Options as lettered lines ("A. ...") for templates that list them ({options}); past 26, as "- ..." lines.
    `spaced`: each line ends in a space ({options:spaced})."""
    options = options or []
    end = " " if spaced else ""
    if len(options) > 26:
        return "\n".join(f"- {option}{end}" for option in options)
    return "\n".join(f"{chr(ord('A') + i)}. {option}{end}" for i, option in enumerate(options))


class _Options:
    """A sample's options as str.format writes them for each of OPTIONS_FORMATS."""

    def __init__(self, options: list[str] | None) -> None:
        self.options = list(options or [])

    def __format__(self, spec: str) -> str:
        if spec == "list":
            return str(self.options)  # Python's list repr, as the authors' "{}".format(choices)
        return render_options(self.options, spaced=spec == "spaced")


def fill_prompt(template: str, sample: dict) -> str:
    return template.format(
        question=sample["question"], context=sample.get("context") or "", options=_Options(sample.get("options"))
    )


def without_instruction(text: str, instruction: str) -> str:
    """A filled prompt (a generation prompt, a request's context) without its benchmark's instruction, which it starts
    with (careval.datasets.Benchmark.instruction): a backend gets the two apart, for a chat template's system turn."""
    if not text.startswith(instruction):
        raise ValueError(f"a prompt that does not start with its benchmark's instruction {instruction!r}")
    return text[len(instruction) :]


def _placeholders(template: str, key: str) -> list[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:  # "Single '}' encountered", "unmatched '{'"
        raise PromptTemplateError(f"{key}: {error} (a literal brace is '{{{{' or '}}}}')") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or conversion or (spec and not (name == "options" and spec in OPTIONS_FORMATS)):
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            known = ", ".join(["{" + known + "}" for known in PLACEHOLDERS] + ["{options:spaced}", "{options:list}"])
            raise PromptTemplateError(
                f"{key}: unknown placeholder {shown} (known: {known}; a literal brace is '{{{{' or '}}}}')"
            )
        names.append(name)
    return names


def check_prompt(
    template: str, task: str, has_context: bool, has_options: bool, key: str, mcqa_style: str = "cloze"
) -> None:
    """Raise PromptTemplateError unless `template` fills every sample of the task with what it needs.

    {question} is every sample's own text: without it each sample gets the same prompt. {context}
    and {options} must appear when the benchmark has them to show (a context field; the options of
    a classification or prescription prompt, or of an MCQA prompt in the letters style) and must
    not when it has not: they would fill as "".
    """
    used = set(_placeholders(template, key))
    if "question" not in used:
        raise PromptTemplateError(f"{key}: no {{question}} placeholder, so every sample would get the same prompt")
    if has_context and "context" not in used:
        raise PromptTemplateError(f"{key}: no {{context}} placeholder, so the samples' context is never shown")
    if not has_context and "context" in used:
        raise PromptTemplateError(f"{key}: {{context}} but the benchmark maps no context field, so it would be empty")
    if task in OPTIONS_LISTED_TASKS and "options" not in used:
        raise PromptTemplateError(f"{key}: no {{options}} placeholder, but a {task} prompt lists the options")
    if task == "mcqa" and mcqa_style == "letters" and "options" not in used:
        raise PromptTemplateError(
            f"{key}: no {{options}} placeholder, but the letters style scores the letters "
            "of the options the prompt lists"
        )
    if not has_options and "options" in used:
        raise PromptTemplateError(f"{key}: {{options}} but {task} samples have no options, so it would be empty")
