"""The negative-question keyword filter that screens CareQA-close questions before open-ended rephrasing."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Paper, appendix A.2: "filter out questions that contained terms such as "incorrect", "except", "false",
# "not correct", or "NOT", as these terms indicate that the questions focus on identifying incorrect
# answers among the provided options."
# Interpretation: terms match as whole words, so "exception", "falsely" or "incorrectly" do not trigger
# (the paper lists the bare words, and "with the exception of" also appears in ordinary clinical
# statements); a hyphenated compound counts as one word, so "false-positive" asks nothing negative.
# Only "NOT" is case-sensitive: the paper writes it in capitals, the way exam questions stress it
# ("Which is NOT..."), while a lower-case "not" is common in questions that ask for the right option.
CASE_INSENSITIVE_TERMS = ("incorrect", "except", "false", "not correct")
UPPER_CASE_TERMS = ("NOT",)
# The same five terms as the MIR booklets write them in Spanish (the source text, screened as well so that a
# poor translation cannot hide a negative question): gendered and plural forms are listed because matching
# stays whole-word. "falso positivo/negativo" is the Spanish spelling of the compound "false-positive", so it
# is excluded like the hyphenated English one; "NO" is case-sensitive for the same reason as "NOT".
SPANISH_CASE_INSENSITIVE_TERMS = (
    "incorrecta",
    "incorrecto",
    "incorrectas",
    "incorrectos",
    "excepto",
    "salvo",
    "falsa",
    "falso",
    "falsas",
    "falsos",
    "no es correcta",
    "no es correcto",
    "no son correctas",
)
SPANISH_UPPER_CASE_TERMS = ("NO",)

_START, _END = r"(?<![\w-])", r"(?![\w-])"
_SPANISH_END = r"(?![\w-])(?!\s+(?:positiv|negativ)[oa]s?\b)"


def _compile(case_insensitive, upper_case, end):
    return [
        (term, re.compile(_START + r"\s+".join(map(re.escape, term.split())) + end, re.IGNORECASE))
        for term in case_insensitive
    ] + [(term, re.compile(_START + re.escape(term) + end)) for term in upper_case]


_PATTERNS = _compile(CASE_INSENSITIVE_TERMS, UPPER_CASE_TERMS, _END)
_SPANISH_PATTERNS = _compile(SPANISH_CASE_INSENSITIVE_TERMS, SPANISH_UPPER_CASE_TERMS, _SPANISH_END)


@dataclass(frozen=True)
class FilterDecision:
    keep: bool
    reason: str | None = None  # the first matched term, for the drop log


def screen_question(question: str, language: str = "en") -> FilterDecision:
    """Keep a question unless it asks for the wrong option (only the question text is screened, as in A.2).

    language: "en" (the paper's terms) or "es" (their Spanish counterparts, for the MIR source text).
    """
    if language not in ("en", "es"):
        raise ValueError(f"screen_question: language must be 'en' or 'es', got {language!r}")
    for term, pattern in _PATTERNS if language == "en" else _SPANISH_PATTERNS:
        match = pattern.search(question)
        if match:
            return FilterDecision(False, f"negative term {term!r} ({match.group(0)!r})")
    return FilterDecision(True)
