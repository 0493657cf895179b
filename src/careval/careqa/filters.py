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

_START, _END = r"(?<![\w-])", r"(?![\w-])"
_PATTERNS = [
    (term, re.compile(_START + r"\s+".join(map(re.escape, term.split())) + _END, re.IGNORECASE))
    for term in CASE_INSENSITIVE_TERMS
] + [(term, re.compile(_START + re.escape(term) + _END)) for term in UPPER_CASE_TERMS]


@dataclass(frozen=True)
class FilterDecision:
    keep: bool
    reason: str | None = None  # the first matched term, for the drop log


def screen_question(question: str) -> FilterDecision:
    """Keep a question unless it asks for the wrong option (only the question text is screened, as in A.2)."""
    for term, pattern in _PATTERNS:
        match = pattern.search(question)
        if match:
            return FilterDecision(False, f"negative term {term!r} ({match.group(0)!r})")
    return FilterDecision(True)
