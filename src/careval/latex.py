"""LaTeX text: the characters a table's cell or caption escapes (the results/tables/*.tex writers)."""

from __future__ import annotations

# the backslash first, so the escapes' own backslashes are not escaped again
ESCAPES = (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"))


def latex_escape(text: str) -> str:
    for char, escaped in ESCAPES:
        text = text.replace(char, escaped)
    return text
