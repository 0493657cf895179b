"""Fill a benchmark's prompt template from a canonical sample."""
from __future__ import annotations


def render_options(options: list[str] | None) -> str:
    """Options as lettered lines ("A. ...") for templates that list them ({options}); past 26, as "- ..." lines."""
    options = options or []
    if len(options) > 26:
        return "\n".join(f"- {option}" for option in options)
    return "\n".join(f"{chr(ord('A') + i)}. {option}" for i, option in enumerate(options))


def fill_prompt(template: str, sample: dict) -> str:
    return template.format(question=sample["question"], context=sample.get("context") or "",
                           options=render_options(sample.get("options")))
