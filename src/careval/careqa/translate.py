"""Translate CareQA-close from Spanish to English field by field, so option order and answer cannot change."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from careval.backends.base import Backend, Sampling
from careval.careqa.layout import COLUMNS
from careval.schemas import CAREQA_CLOSE_SCHEMA, CAREQA_TRANSLATION_AUDIT_SCHEMA

TEXT_FIELDS = ("question", "op1", "op2", "op3", "op4")

# The paper translated with GPT-4 and does not print its prompt; this one asks for the translation alone.
TRANSLATION_PROMPT = (
    "Translate the following text from a Spanish medical licensing exam (MIR) into English. "
    "Keep the medical terminology precise, keep numbers and units, and do not answer the question. "
    "Reply with the English translation only.\n\n"
    "Spanish: {text}\n"
    "English:"
)


def clean_translation(output: str) -> tuple[str, str]:
    """(text, status): the first paragraph of the reply, without a label the model may echo."""
    text = output.strip()
    for label in ("English:", "Translation:", "English translation:"):
        if text.lower().startswith(label.lower()):
            text = text[len(label) :].strip()
    # A chatty model continues after the translation with a blank line and comments; the translation
    # of one exam field is a single paragraph.
    text = text.split("\n\n", 1)[0].strip()
    return (text, "ok") if text else ("", "empty_output")


def translate_frame(spanish: pl.DataFrame, backend: Backend, sampling: Sampling) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(English rows whose five fields all translated, the per-field audit with a status each)."""
    jobs = [(row["unique_id"], field, row[field]) for row in spanish.iter_rows(named=True) for field in TEXT_FIELDS]
    outputs = backend.generate([TRANSLATION_PROMPT.format(text=text) for _, _, text in jobs], sampling) if jobs else []
    audit_rows, translated = [], {}
    for (uid, field, source), output in zip(jobs, outputs, strict=True):
        text, status = clean_translation(output)
        audit_rows.append({"unique_id": uid, "field": field, "source": source, "output": output, "status": status})
        translated.setdefault(uid, {})[field] = text if status == "ok" else None
    audit = pl.DataFrame(audit_rows, schema=CAREQA_TRANSLATION_AUDIT_SCHEMA)
    english = [
        {**row, **translated[row["unique_id"]]}
        for row in spanish.iter_rows(named=True)
        if all(translated[row["unique_id"]][f] is not None for f in TEXT_FIELDS)
    ]
    frame = pl.DataFrame(english, schema=CAREQA_CLOSE_SCHEMA) if english else pl.DataFrame(schema=CAREQA_CLOSE_SCHEMA)
    return frame.select(COLUMNS), audit


def translate_careqa(
    spanish_path: Path,
    backend: Backend,
    sampling: Sampling,
    english_path: Path,
    audit_path: Path,
    report_path: Path,
) -> dict:
    """Stage 3: translate CareQA_es into CareQA_en; a question with any field untranslated is left out, counted."""
    spanish = pl.read_parquet(spanish_path)
    english, audit = translate_frame(spanish, backend, sampling)
    for path in (english_path, audit_path, report_path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    english.write_parquet(english_path)
    audit.write_parquet(audit_path)
    field_status = dict(audit.group_by("status").len().sort("status").iter_rows()) if audit.height else {}
    report = {
        "stage": "translate",
        "model": backend.name,
        "input": spanish.height,
        "translated": english.height,
        "translation_failed": spanish.height - english.height,
        "field_status": field_status,
    }
    Path(report_path).write_text(json.dumps(report, indent=2) + "\n")
    return report
