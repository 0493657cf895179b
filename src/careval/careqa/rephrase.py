"""CareQA-open from CareQA-close: negative filter, two rephrasing prompts + LLM selection, unique-answer validation."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import polars as pl

from careval.backends.base import Backend, Sampling
from careval.careqa.filters import screen_question
from careval.careqa.llm import as_backend, verdict_sampling
from careval.schemas import CAREQA_OPEN_SCHEMA

# Appendix A.2 describes the prompts without printing them: rephrase into an open-ended question,
# "only rephrase questions that could be effectively transformed", exclude questions that "require a
# selection from the provided answers", use "two different prompts", then select "the best-rephrased
# version or discard the question if neither was suitable". These prompts follow that description;
# the first rewrites the item as it stands, the second asks for a self-contained stem and a full answer.
REPHRASE_PROMPTS = (
    "You are a medical educator. Rewrite the multiple-choice exam question below as an open-ended question "
    "that can be answered without seeing the options, and whose correct answer is the given correct answer.\n"
    "Only rewrite it if this can be done well. If the question cannot be answered without its options "
    "(for example, it asks to compare the options or to pick one of them), reply exactly: SKIP\n"
    "Otherwise reply in exactly this format:\nQuestion: <the open-ended question>\nAnswer: <the answer>\n\n"
    "Multiple-choice question: {question}\nOptions:\n1. {op1}\n2. {op2}\n3. {op3}\n4. {op4}\n"
    "Correct answer: {answer}",
    "Convert this medical exam item into a free-response question with its reference answer. Keep every "
    "clinical detail of the stem, remove any mention of the options, and write the reference answer as one "
    "complete sentence that states the correct answer.\n"
    "If the item makes no sense without its options, reply exactly: SKIP\n"
    "Reply in exactly this format:\nQuestion: <the free-response question>\nAnswer: <the reference answer>\n\n"
    "Exam item: {question}\nCorrect option: {answer}",
)

SELECTION_PROMPT = (
    "Below is a multiple-choice medical exam question with its correct answer, followed by candidate "
    "open-ended rewrites. Choose the candidate that keeps the meaning of the original question and whose "
    "answer matches the correct answer. If no candidate is suitable, reply NONE.\n\n"
    "Original question: {question}\nCorrect answer: {answer}\n\n{candidates}\n\n"
    "Reply with the number of the best candidate, or NONE."
)

# Second iteration (A.2): "the model was instructed to validate only questions that could be answered
# exclusively using the ground truth, ensuring there were no alternative correct answers".
VALIDATION_PROMPT = (
    "Below is an open-ended medical question and its reference answer. Reply YES if the reference answer is "
    "the only correct answer to the question, so that no different answer would also be valid. Reply NO if "
    "other answers could also be correct, or if the reference answer does not answer the question.\n\n"
    "Question: {question}\nReference answer: {answer}\n\nReply YES or NO."
)

OPEN_COLUMNS = tuple(CAREQA_OPEN_SCHEMA)

# Markdown bold around the label ("**Question:**") is common in chat replies.
_FIELD = re.compile(r"^\s*\**\s*(question|answer)\s*\**\s*:\s*\**\s*(.*)$", re.IGNORECASE)


def correct_option(row: dict) -> str:
    return row[f"op{row['cop']}"]


def parse_rephrasing(output: str) -> tuple[str | None, str | None, str]:
    """(question, answer, status) from a reply in the "Question: ... / Answer: ..." format.

    status: ok | skipped (the model declined, as the prompt allows) | empty_output | parse_error.
    """
    text = output.strip()
    if not text:
        return None, None, "empty_output"
    if re.match(r"^\W*SKIP\b", text, re.IGNORECASE):
        return None, None, "skipped"
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match:
            current = match.group(1).lower()
            if current in found:  # a second "Question:" starts a new item the prompt did not ask for
                break
            found[current] = [match.group(2).strip()]
        elif current and line.strip():
            found[current].append(line.strip())
        elif current and not line.strip() and found.get(current, [""])[-1]:
            current = None  # a blank line ends the field; what follows is commentary
    question = " ".join(found.get("question", [])).strip()
    answer = " ".join(found.get("answer", [])).strip()
    if question and answer:
        return question, answer, "ok"
    return None, None, "parse_error"


def parse_choice(output: str, offered: tuple[int, ...]) -> tuple[int | None, str]:
    """(chosen candidate, status) from a selection reply: ok | none | empty_output | parse_error."""
    text = output.strip()
    if not text:
        return None, "empty_output"
    match = re.search(r"\b(NONE|\d+)\b", text, re.IGNORECASE)
    if not match:
        return None, "parse_error"
    if match.group(1).upper() == "NONE":
        return None, "none"
    choice = int(match.group(1))
    # A number that names no offered candidate is not a choice.
    return (choice, "ok") if choice in offered else (None, "parse_error")


def parse_verdict(output: str) -> tuple[bool | None, str]:
    """(unique answer?, status) from a validation reply: ok | empty_output | parse_error."""
    text = output.strip()
    if not text:
        return None, "empty_output"
    match = re.search(r"\b(YES|NO)\b", text, re.IGNORECASE)
    if not match:
        return None, "parse_error"
    return match.group(1).upper() == "YES", "ok"


def screen_negatives(english: pl.DataFrame, spanish: pl.DataFrame) -> pl.DataFrame:
    """One row per English question: keep?, and why not. The Spanish source is screened too, so that a
    translation which lost the stressed "NO" cannot let a negative question through."""
    source = dict(zip(spanish["unique_id"], spanish["question"]))
    rows = []
    for uid, question in zip(english["unique_id"], english["question"]):
        es = screen_question(source.get(uid, ""), language="es")
        en = screen_question(question, language="en")
        reason = f"es: {es.reason}" if es.reason else f"en: {en.reason}" if en.reason else None
        rows.append({"unique_id": uid, "keep": es.keep and en.keep, "flagged_es": not es.keep,
                     "flagged_en": not en.keep, "reason": reason})
    schema = {"unique_id": pl.String, "keep": pl.Boolean, "flagged_es": pl.Boolean, "flagged_en": pl.Boolean,
              "reason": pl.String}
    return pl.DataFrame(rows, schema=schema)


def rephrase_and_select(kept: pl.DataFrame, backend: Backend, sampling: Sampling,
                        selection_sampling: Sampling) -> pl.DataFrame:
    """Both prompts per question, then the selector's choice among the candidates that parsed."""
    rows = list(kept.iter_rows(named=True))
    prompts = [p.format(**row, answer=correct_option(row)) for row in rows for p in REPHRASE_PROMPTS]
    outputs = backend.generate(prompts, sampling) if prompts else []
    k = len(REPHRASE_PROMPTS)
    records = []
    for i, row in enumerate(rows):
        record = {"unique_id": row["unique_id"]}
        for j in range(k):
            question, answer, status = parse_rephrasing(outputs[i * k + j])
            record.update({f"raw_{j + 1}": outputs[i * k + j], f"question_{j + 1}": question,
                           f"answer_{j + 1}": answer, f"status_{j + 1}": status})
        records.append(record)

    selection_prompts, asked = [], []
    for i, (row, record) in enumerate(zip(rows, records)):
        offered = tuple(j for j in range(1, k + 1) if record[f"status_{j}"] == "ok")
        record["offered"] = ",".join(map(str, offered))
        if not offered:
            record.update(choice_raw=None, choice=None, selection_status="no_candidate")
            continue
        candidates = "\n\n".join(
            f"Candidate {j}:\nQuestion: {record[f'question_{j}']}\nAnswer: {record[f'answer_{j}']}" for j in offered
        )
        selection_prompts.append(SELECTION_PROMPT.format(question=row["question"], answer=correct_option(row),
                                                         candidates=candidates))
        asked.append((i, offered))
    choices = backend.generate(selection_prompts, selection_sampling) if selection_prompts else []
    for (i, offered), reply in zip(asked, choices, strict=True):
        choice, status = parse_choice(reply, offered)
        records[i].update(choice_raw=reply, choice=choice, selection_status=status)
    for record in records:
        chosen = record["choice"]
        record["open_question"] = record[f"question_{chosen}"] if chosen else None
        record["open_answer"] = record[f"answer_{chosen}"] if chosen else None
    schema = {"unique_id": pl.String}
    for j in range(1, k + 1):
        schema.update({f"raw_{j}": pl.String, f"question_{j}": pl.String, f"answer_{j}": pl.String,
                       f"status_{j}": pl.String})
    schema.update({"offered": pl.String, "choice_raw": pl.String, "choice": pl.Int64,
                   "selection_status": pl.String, "open_question": pl.String, "open_answer": pl.String})
    return pl.DataFrame(records, schema=schema)


def validate_unique_answer(selected: pl.DataFrame, backend: Backend, sampling: Sampling) -> pl.DataFrame:
    prompts = [VALIDATION_PROMPT.format(question=q, answer=a)
               for q, a in zip(selected["open_question"], selected["open_answer"])]
    replies = backend.generate(prompts, sampling) if prompts else []
    verdicts = [parse_verdict(reply) for reply in replies]
    return selected.select("unique_id", "open_question", "open_answer").with_columns(
        pl.Series("validation_raw", replies, dtype=pl.String),
        pl.Series("unique_answer", [v for v, _ in verdicts], dtype=pl.Boolean),
        pl.Series("validation_status", [s for _, s in verdicts], dtype=pl.String),
    )


def _write(frame: pl.DataFrame, path: Path | str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)


def _report(path: Path | str, report: dict) -> dict:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=2) + "\n")
    return report


def build_screened(english_path: Path, spanish_path: Path, screened_path: Path, report_path: Path) -> dict:
    """Stage 5a: the keyword filter (deterministic)."""
    screened = screen_negatives(pl.read_parquet(english_path), pl.read_parquet(spanish_path))
    _write(screened, screened_path)
    return _report(report_path, {
        "stage": "negative_filter",
        "input": screened.height,
        "negative_filtered": int((~screened["keep"]).sum()),
        "negative_flagged_es": int(screened["flagged_es"].sum()),
        "negative_flagged_en_only": int((screened["flagged_en"] & ~screened["flagged_es"]).sum()),
        "kept": int(screened["keep"].sum()),
    })


def build_iteration1(english_path: Path, screened_path: Path, backend: Backend | dict, sampling: Sampling,
                     audit_path: Path, report_path: Path) -> dict:
    """Stage 5b: two rephrasings per kept question and the selection among them (the first iteration)."""
    backend = as_backend(backend)
    keep = pl.read_parquet(screened_path).filter(pl.col("keep"))["unique_id"]
    kept = pl.read_parquet(english_path).filter(pl.col("unique_id").is_in(keep.implode()))
    audit = rephrase_and_select(kept, backend, sampling, verdict_sampling(sampling))
    _write(audit, audit_path)
    status = {f"prompt_{j}": dict(Counter(audit[f"status_{j}"].to_list())) if audit.height else {}
              for j in range(1, len(REPHRASE_PROMPTS) + 1)}
    return _report(report_path, {
        "stage": "rephrase_select",
        "model": backend.name,
        "input": kept.height,
        "rephrasing_status": status,
        "selection_status": dict(Counter(audit["selection_status"].to_list())) if audit.height else {},
        "selected": int(audit["open_question"].is_not_null().sum()) if audit.height else 0,
    })


def build_open(english_path: Path, iteration1_path: Path, backend: Backend | dict, sampling: Sampling,
               open_path: Path, audit_path: Path, report_path: Path) -> dict:
    """Stage 5c: keep the selected pairs the validator says only the ground truth answers (second iteration)."""
    backend = as_backend(backend)
    iteration1 = pl.read_parquet(iteration1_path)
    selected = (iteration1.filter(pl.col("open_question").is_not_null()) if iteration1.height
                else pl.DataFrame(schema={"unique_id": pl.String, "open_question": pl.String, "open_answer": pl.String}))
    audit = validate_unique_answer(selected, backend, verdict_sampling(sampling))
    _write(audit, audit_path)
    valid = audit.filter(pl.col("unique_answer").fill_null(False))
    meta = pl.read_parquet(english_path).select("exam_id", "year", "category", "unique_id")
    open_set = (valid.join(meta, on="unique_id", how="left")
                .rename({"open_question": "question", "open_answer": "answer"})
                .select(OPEN_COLUMNS).cast(CAREQA_OPEN_SCHEMA))
    _write(open_set, open_path)
    return _report(report_path, {
        "stage": "validate_unique_answer",
        "model": backend.name,
        "input": selected.height,
        "validation_status": dict(Counter(audit["validation_status"].to_list())) if audit.height else {},
        "rejected_multiple_answers": int((audit["unique_answer"] == False).sum()) if audit.height else 0,  # noqa: E712
        "open": open_set.height,
    })
