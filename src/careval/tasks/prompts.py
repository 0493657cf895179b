"""Fill a benchmark's prompt template from a canonical sample."""
from __future__ import annotations


def fill_prompt(template: str, sample: dict) -> str:
    return template.format(question=sample["question"], context=sample.get("context") or "")
