"""CareQA-open from CareQA-close: negative filter; iteration 1 (two rephrasing prompts + LLM selection, then
unique-answer validation); iteration 2 (a new rephrasing of the pairs iteration 1 failed, then the same validation)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from careval.backends.base import Backend, Sampling
from careval.careqa.filters import screen_question
from careval.careqa.llm import verdict_sampling
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

# Both iterations end with this check. A.2 on the second iteration: "the model was instructed to validate only
# questions that could be answered exclusively using the ground truth, ensuring there were no alternative
# correct answers".
VALIDATION_PROMPT = (
    "Below is an open-ended medical question and its reference answer. Reply YES if the reference answer is "
    "the only correct answer to the question, so that no different answer would also be valid. Reply NO if "
    "other answers could also be correct, or if the reference answer does not answer the question.\n\n"
    "Question: {question}\nReference answer: {answer}\n\nReply YES or NO."
)

# Iteration 2 (section 2.1, A.3): reviewers found that answers differing from the ground truth could still be
# valid, so "a new rephrasing iteration was carried out, explicitly prompting the model to account for this
# nuance, and questions with multiple valid answers were excluded". The paper does not print the prompt; this
# one names the nuance, shows the pair iteration 1 failed with, and lets the model SKIP (exclude) a question
# that has no open form with a single valid answer.
UNIQUE_REPHRASE_PROMPT = (
    "A previous open-ended rewrite of the multiple-choice medical exam question below was rejected, because "
    "answers different from the correct answer could also have been valid.\n"
    "Rewrite the question as an open-ended question whose only valid answer is the given correct answer, so "
    "that no different answer could also be correct: keep the clinical details and add the context or "
    "constraints needed to rule the other answers out. If no open-ended question can have the correct answer "
    "as its only valid answer, reply exactly: SKIP\n"
    "Otherwise reply in exactly this format:\nQuestion: <the open-ended question>\nAnswer: <the answer>\n\n"
    "Multiple-choice question: {question}\nOptions:\n1. {op1}\n2. {op2}\n3. {op3}\n4. {op4}\n"
    "Correct answer: {answer}\n\nRejected rewrite:\nQuestion: {previous_question}\nAnswer: {previous_answer}"
)

# The published columns; the build adds `iteration` (1 or 2), which the catalogue and the review sheets ignore.
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
        rows.append(
            {
                "unique_id": uid,
                "keep": es.keep and en.keep,
                "flagged_es": not es.keep,
                "flagged_en": not en.keep,
                "reason": reason,
            }
        )
    schema = {
        "unique_id": pl.String,
        "keep": pl.Boolean,
        "flagged_es": pl.Boolean,
        "flagged_en": pl.Boolean,
        "reason": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def rephrase_and_select(
    kept: pl.DataFrame, backend: Backend, sampling: Sampling, selection_sampling: Sampling
) -> pl.DataFrame:
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
            record.update(
                {
                    f"raw_{j + 1}": outputs[i * k + j],
                    f"question_{j + 1}": question,
                    f"answer_{j + 1}": answer,
                    f"status_{j + 1}": status,
                }
            )
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
        selection_prompts.append(
            SELECTION_PROMPT.format(question=row["question"], answer=correct_option(row), candidates=candidates)
        )
        asked.append((i, offered))
    choices = backend.generate(selection_prompts, selection_sampling) if selection_prompts else []
    for (i, offered), reply in zip(asked, choices, strict=True):
        choice, status = parse_choice(reply, offered)
        records[i].update(choice_raw=reply, choice=choice, selection_status=status)
    for record in records:
        chosen = record["choice"]
        record["open_question"] = record[f"question_{chosen}"] if chosen else None
        record["open_answer"] = record[f"answer_{chosen}"] if chosen else None
    schema: dict[str, Any] = {"unique_id": pl.String}
    for j in range(1, k + 1):
        schema.update(
            {f"raw_{j}": pl.String, f"question_{j}": pl.String, f"answer_{j}": pl.String, f"status_{j}": pl.String}
        )
    schema.update(
        {
            "offered": pl.String,
            "choice_raw": pl.String,
            "choice": pl.Int64,
            "selection_status": pl.String,
            "open_question": pl.String,
            "open_answer": pl.String,
        }
    )
    return pl.DataFrame(records, schema=schema)


def validate_unique_answer(selected: pl.DataFrame, backend: Backend, sampling: Sampling) -> pl.DataFrame:
    prompts = [
        VALIDATION_PROMPT.format(question=q, answer=a)
        for q, a in zip(selected["open_question"], selected["open_answer"])
    ]
    replies = backend.generate(prompts, sampling) if prompts else []
    verdicts = [parse_verdict(reply) for reply in replies]
    return selected.select("unique_id", "open_question", "open_answer").with_columns(
        pl.Series("validation_raw", replies, dtype=pl.String),
        pl.Series("unique_answer", [v for v, _ in verdicts], dtype=pl.Boolean),
        pl.Series("validation_status", [s for _, s in verdicts], dtype=pl.String),
    )


def rephrase_unique(failed: pl.DataFrame, backend: Backend, sampling: Sampling) -> pl.DataFrame:
    """One new rephrasing per failed question (close-ended row plus previous_question/previous_answer)."""
    rows = list(failed.iter_rows(named=True))
    prompts = [UNIQUE_REPHRASE_PROMPT.format(**row, answer=correct_option(row)) for row in rows]
    outputs = backend.generate(prompts, sampling) if prompts else []
    records = []
    for row, output in zip(rows, outputs, strict=True):
        question, answer, status = parse_rephrasing(output)
        records.append(
            {
                "unique_id": row["unique_id"],
                "previous_question": row["previous_question"],
                "previous_answer": row["previous_answer"],
                "previous_status": row["previous_status"],
                "raw": output,
                "status": status,
                "open_question": question,
                "open_answer": answer,
            }
        )
    schema = {
        "unique_id": pl.String,
        "previous_question": pl.String,
        "previous_answer": pl.String,
        "previous_status": pl.String,
        "raw": pl.String,
        "status": pl.String,
        "open_question": pl.String,
        "open_answer": pl.String,
    }
    return pl.DataFrame(records, schema=schema)


def _counts(column: pl.Series) -> dict:
    return dict(Counter(column.to_list())) if column.len() else {}


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
    return _report(
        report_path,
        {
            "stage": "negative_filter",
            "input": screened.height,
            "negative_filtered": int((~screened["keep"]).sum()),
            "negative_flagged_es": int(screened["flagged_es"].sum()),
            "negative_flagged_en_only": int((screened["flagged_en"] & ~screened["flagged_es"]).sum()),
            "kept": int(screened["keep"].sum()),
        },
    )


def build_iteration1(
    english_path: Path,
    screened_path: Path,
    backend: Backend,
    sampling: Sampling,
    audit_path: Path,
    report_path: Path,
) -> dict:
    """Iteration 1: two rephrasings per kept question and the selection among them."""
    keep = pl.read_parquet(screened_path).filter(pl.col("keep"))["unique_id"]
    kept = pl.read_parquet(english_path).filter(pl.col("unique_id").is_in(keep.implode()))
    audit = rephrase_and_select(kept, backend, sampling, verdict_sampling(sampling))
    _write(audit, audit_path)
    return _report(
        report_path,
        {
            "stage": "rephrase_iteration1",
            "model": backend.name,
            "input": kept.height,
            "rephrasing_status": {
                f"prompt_{j}": _counts(audit[f"status_{j}"]) for j in range(1, len(REPHRASE_PROMPTS) + 1)
            },
            # at least one prompt gave a parseable pair, so the selector was asked
            "rephrased": int((audit["offered"] != "").sum()),
            "selection_status": _counts(audit["selection_status"]),
            "selected": int(audit["open_question"].is_not_null().sum()),
        },
    )


def build_validation(
    candidates_path: Path,
    backend: Backend,
    sampling: Sampling,
    iteration: int,
    audit_path: Path,
    report_path: Path,
) -> dict:
    """Either iteration's last step: ask whether the ground truth is the only valid answer of each pair."""
    selected = pl.read_parquet(candidates_path).filter(pl.col("open_question").is_not_null())
    audit = validate_unique_answer(selected, backend, verdict_sampling(sampling))
    _write(audit, audit_path)
    return _report(
        report_path,
        {
            "stage": f"validate_iteration{iteration}",
            "model": backend.name,
            "input": selected.height,
            "validation_status": _counts(audit["validation_status"]),
            "validated": int(audit["unique_answer"].fill_null(False).sum()),
            "rejected_multiple_answers": int((~audit["unique_answer"]).fill_null(False).sum()),
            "rejected_no_verdict": int(audit["unique_answer"].is_null().sum()),
        },
    )


def build_iteration2(
    english_path: Path,
    validation1_path: Path,
    backend: Backend,
    sampling: Sampling,
    audit_path: Path,
    report_path: Path,
) -> dict:
    """Iteration 2: rephrase again, asking for a single valid answer, every pair iteration 1's validator did
    not accept (NO, or no parseable verdict). Questions iteration 1 selected nothing for are not re-asked: the
    model skipped them or the selector found no suitable rewrite, and the paper's second iteration only
    removed pairs from the first one's 3,730 (to 2,769)."""
    validation = pl.read_parquet(validation1_path)
    failed = validation.filter(~pl.col("unique_answer").fill_null(False)).select(
        "unique_id",
        previous_question="open_question",
        previous_answer="open_answer",
        previous_status=pl.when(pl.col("unique_answer").is_null())
        .then(pl.lit("no_verdict"))
        .otherwise(pl.lit("multiple_answers")),
    )
    english = pl.read_parquet(english_path)
    rows = english.join(failed, on="unique_id", how="inner", maintain_order="left")
    if rows.height != failed.height:
        missing = sorted(set(failed["unique_id"]) - set(rows["unique_id"]))
        raise ValueError(f"{validation1_path}: {missing[0]} is not a question of {english_path}")
    audit = rephrase_unique(rows, backend, sampling)
    _write(audit, audit_path)
    return _report(
        report_path,
        {
            "stage": "rephrase_iteration2",
            "model": backend.name,
            "input": rows.height,
            "input_status": _counts(audit["previous_status"]),
            "rephrasing_status": _counts(audit["status"]),
            "rephrased": int(audit["open_question"].is_not_null().sum()),
        },
    )


def build_open(english_path: Path, validation_paths: list[Path], open_path: Path, report_path: Path) -> dict:
    """CareQA_en_open: the validated pairs of every iteration, in CareQA_en order, each with its iteration."""
    parts = [
        pl.read_parquet(path)
        .filter(pl.col("unique_answer").fill_null(False))
        .select("unique_id", "open_question", "open_answer", iteration=pl.lit(n, dtype=pl.Int64))
        for n, path in enumerate(validation_paths, start=1)
    ]
    valid = pl.concat(parts)
    twice = valid.filter(pl.col("unique_id").is_duplicated())["unique_id"]
    if twice.len():  # iteration 2 only re-asks what iteration 1 did not validate
        raise ValueError(f"{', '.join(map(str, validation_paths))}: {twice[0]} is validated in two iterations")
    meta = pl.read_parquet(english_path).select("exam_id", "year", "category", "unique_id")
    open_set = (
        meta.join(valid, on="unique_id", how="inner", maintain_order="left")
        .rename({"open_question": "question", "open_answer": "answer"})
        .select(*OPEN_COLUMNS, "iteration")
        .cast({**CAREQA_OPEN_SCHEMA, "iteration": pl.Int64})
    )
    _write(open_set, open_path)
    return _report(
        report_path,
        {
            "stage": "open",
            "per_iteration": {
                f"iteration{n}": int((open_set["iteration"] == n).sum()) for n in range(1, len(validation_paths) + 1)
            },
            "open": open_set.height,
        },
    )
