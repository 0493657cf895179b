"""Named reshapes of a source's raw rows, for sources a declarative field mapping cannot express.

Each takes the list of raw rows and returns the rows the entry's `fields` then map (a function
may drop a row, as lm-eval's process_docs does). An entry names one with `transform:`. A reshaped
row keeps the place its source row was read from (loaders.located), so errors still name the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from careval.datasets.loaders import located
from careval.tasks import prescription

LETTER_PREFIX = re.compile(r"^[A-Z][.)]\s+")


def strip_option_letters(rows: list[dict]) -> list[dict]:
    """MedMCQA's Medpredict re-host writes each choice as "A. text"; the option is the text."""
    return [
        located(
            {
                **row,
                "choices": [LETTER_PREFIX.sub("", c) if isinstance(c, str) else c for c in row.get("choices") or []],
            },
            row,
        )
        if "choices" in row
        else row
        for row in rows
    ]


def headqa_ids(rows: list[dict]) -> list[dict]:
    """HEAD-QA numbers questions within an exam (`qid`), so the sample id is exam/qid."""
    return [located({**row, "exam_qid": f"{row.get('name')}/{row.get('qid')}"}, row) for row in rows]


def biored_documents(rows: list[dict]) -> list[dict]:
    """BioC documents -> text (title + abstract), the concepts' mention names and the gold relations.

    Gold relations name concepts by identifier (MeSH D001919, NCBI Gene 6331); a model can only
    name them as written, so each relation keeps every mention text of both concepts.
    """
    out = []
    for row in rows:
        passages = row.get("passages")
        if not isinstance(passages, list) or "relations" not in row:
            out.append(row)  # the field mapping then names what is missing
            continue
        names: dict[str, list[str]] = {}
        for passage in passages:
            for annotation in passage.get("annotations", []):
                for identifier in str(annotation["infons"].get("identifier", "")).split(","):
                    mentions = names.setdefault(identifier.strip(), [])
                    if annotation["text"] not in mentions:
                        mentions.append(annotation["text"])
        relations = []
        for relation in row["relations"]:
            infons = relation["infons"]
            relations.append(
                {
                    "pair": [infons["entity1"], infons["entity2"]],
                    "entity1": names.get(infons["entity1"], [infons["entity1"]]),
                    "entity2": names.get(infons["entity2"], [infons["entity2"]]),
                    "type": infons["type"],
                }
            )
        text = "\n".join(passage["text"] for passage in passages)
        relations_text = "\n".join(f"{r['entity1'][0]} | {r['entity2'][0]} | {r['type']}" for r in relations)
        out.append(
            located(
                {
                    **row,
                    "text": text,
                    "relations": relations,
                    "entities": names,
                    "relations_text": relations_text or "(none)",
                },
                row,
            )
        )
    return out


def meqsum_message(rows: list[dict]) -> list[dict]:
    """MeQSum's CHQ is "SUBJECT: ...\nMESSAGE: ..."; lm-eval's meqsum (the authors') sends what follows
    "MESSAGE" and the 9 characters after its start ("MESSAGE: "), or the whole CHQ without one."""
    out = []
    for row in rows:
        text = row.get("CHQ")
        if isinstance(text, str):
            start = text.find("MESSAGE")
            row = located({**row, "message": text[start + 9 :] if start != -1 else text}, row)
        out.append(row)  # without a CHQ, the field mapping names what is missing
    return out


def _report_sections(text: str) -> tuple[str, str]:
    # lm-eval's mimic_repsum (doc_to_text, doc_to_target), step for step: the section starting at the
    # first "FINDING" / "IMPRESSION" (any case; -1 when absent, so a missing one takes the last
    # character), each up to the first run of five spaces; findings too short -> the text before IMPRESSION.
    impression = re.search("IMPRESSION", text, re.IGNORECASE)
    finding = re.search("FINDING", text, re.IGNORECASE)
    a = impression.start() if impression is not None else -1
    b = finding.start() if finding is not None else -1
    if a < b:
        impressions = text[a:b].split("     ")[0]
        findings = text[b:].split("     ")[0]
    else:
        impressions = text[a:].split("     ")[0]
        findings = text[b:a].split("     ")[0]
    if len(findings) < 5 < len(impressions):
        findings = text[:a]
    return findings, impressions


def mimic_findings_impressions(rows: list[dict]) -> list[dict]:
    """MIMIC-III reports (extractive_notes_summ) -> `findings` (the input) and `impressions` (the reference)."""
    out = []
    for row in rows:
        text = row.get("extractive_notes_summ")
        if isinstance(text, str):
            findings, impressions = _report_sections(text)
            row = located({**row, "findings": findings, "impressions": impressions}, row)
        out.append(row)
    return out


TRANSFORMS: dict[str, Callable[[list[dict]], list[dict]]] = {
    "meqsum_message": meqsum_message,
    "mimic_findings_impressions": mimic_findings_impressions,
    "strip_option_letters": strip_option_letters,
    "headqa_ids": headqa_ids,
    "biored_documents": biored_documents,
    "prescription_easy": lambda rows: [located(row, rows[i]) for i, row in prescription.indexed_rows(rows, hard=False)],
    "prescription_hard": lambda rows: [located(row, rows[i]) for i, row in prescription.indexed_rows(rows, hard=True)],
}


def apply_transform(name: str | None, rows: list[dict]) -> list[dict]:
    if name is None:
        return rows
    if name not in TRANSFORMS:
        raise KeyError(f"unknown transform '{name}': known are {', '.join(sorted(TRANSFORMS))}")
    return TRANSFORMS[name](rows)
