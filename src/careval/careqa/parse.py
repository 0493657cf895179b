"""Parse a MIR exam booklet and its answer key into CareQA questions, counting every question dropped."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from careval.careqa.pdf import extract_pdf_text

__all__ = [
    "ExamQuestion",
    "ParseReport",
    "extract_pdf_text",
    "parse_answer_key",
    "parse_booklet",
    "parse_exam",
    "parse_exam_pdf",
]

N_OPTIONS = 4

# Booklets number questions and options the same way ("12. ...", "1. ..."); some editions write "12.-".
_ITEM = re.compile(r"^(\d{1,3})\s*(?:\.-?|\))\s*(\S.*)?$")

# Page furniture a PDF extraction leaves between questions: "- 12 -", a bare page number, "Página 3 de 20", "3/20".
DEFAULT_IGNORE = (
    r"-\s*\d+\s*-",
    r"\d+",
    r"p[áa]gina\s+\d+(\s+de\s+\d+)?",
    r"\d+\s*/\s*\d+",
)

# Key cells that mean the question was annulled (impugned) after the exam.
_ANNULLED = {"0", "-", "–", "—", "anulada", "anulado", "anul."}  # noqa: RUF001  (the booklets use en and em dashes)


@dataclass(frozen=True)
class ExamQuestion:
    exam_id: int
    number: int
    question: str
    options: tuple[str, str, str, str]
    cop: int  # 1-based, as in the official key and the published CareQA
    year: int
    category: str


@dataclass(frozen=True)
class ParseReport:
    n_parsed: int
    annulled: tuple[int, ...] = ()
    misparsed: dict[int, str] = field(default_factory=dict)  # question number -> why it was dropped

    @property
    def n_annulled(self) -> int:
        return len(self.annulled)

    @property
    def n_misparsed(self) -> int:
        return len(self.misparsed)

    @property
    def dropped(self) -> tuple[int, ...]:
        return tuple(sorted({*self.annulled, *self.misparsed}))


@dataclass
class _Item:
    number: int
    lines: list[str]

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.lines).split())


def _items(text: str, ignore: Iterable[str]) -> list[_Item]:
    skip = [re.compile(p, re.IGNORECASE) for p in (*DEFAULT_IGNORE, *ignore)]
    items: list[_Item] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or any(p.fullmatch(line) for p in skip):
            continue
        match = _ITEM.match(line)
        if match:
            items.append(_Item(int(match.group(1)), [match.group(2) or ""]))
        elif items:
            items[-1].lines.append(line)
        # Text before the first numbered line is the cover page; nothing there belongs to a question.
    return items


def _is_strong_header(items: list[_Item], i: int) -> bool:
    # A header followed by exactly options 1..4 (and no option 5) cannot be confused with an option or
    # with the numbered instructions on the cover, so these anchor the parse.
    following = [it.number for it in items[i + 1 : i + 2 + N_OPTIONS]]
    return following[:N_OPTIONS] == list(range(1, N_OPTIONS + 1)) and following[N_OPTIONS:] != [N_OPTIONS + 1]


def parse_booklet(
    text: str, ignore: Iterable[str] = ()
) -> tuple[dict[int, tuple[str, tuple[str, ...]]], dict[int, str]]:
    """Return ({number: (question, options)}, {number: reason}) for the well-formed and the broken questions.

    `ignore` adds regexes (matched against a whole stripped line) for page headers such as the exam title.
    """
    items = _items(text, ignore)
    anchors: list[int] = []
    i = 0
    while i < len(items):
        last = items[anchors[-1]].number if anchors else 0
        if items[i].number > last and _is_strong_header(items, i):
            anchors.append(i)
            i += 1 + N_OPTIONS
        else:
            i += 1

    good: dict[int, tuple[str, tuple[str, ...]]] = {}
    bad: dict[int, str] = {}
    bounds = [*anchors, len(items)]
    first = anchors[0] if anchors else len(items)
    # Questions before the first anchor are looked for in the leading items the same way as in any gap.
    _fill_gap(items, 0, first, 0, items[first].number if anchors else None, good, bad, owner=None)
    for a, start in enumerate(anchors):
        header = items[start]
        good[header.number] = (header.text, tuple(it.text for it in items[start + 1 : start + 1 + N_OPTIONS]))
        stop = bounds[a + 1]
        nxt = items[stop].number if stop < len(items) else None
        _fill_gap(items, start + 1 + N_OPTIONS, stop, header.number, nxt, good, bad, owner=header.number)
    for number in bad:
        good.pop(number, None)
    return good, bad


def _fill_gap(
    items: list[_Item],
    lo: int,
    hi: int,
    after: int,
    before: int | None,
    good: dict[int, tuple[str, tuple[str, ...]]],
    bad: dict[int, str],
    owner: int | None,
) -> None:
    """Account for items[lo:hi], found between question `after` and question `before` (None: end of booklet)."""
    expected = after + 1
    headers: list[int] = []
    for j in range(lo, hi):
        if items[j].number == expected and (before is None or expected < before):
            headers.append(j)
            expected += 1
    if owner is not None and (headers[0] if headers else hi) > lo:
        found = [it.number for it in items[lo : headers[0] if headers else hi]]
        bad[owner] = f"unexpected numbered lines after option {N_OPTIONS}: {found}"
    for k, j in enumerate(headers):
        end = headers[k + 1] if k + 1 < len(headers) else hi
        found = [it.number for it in items[j + 1 : end]]
        if found == list(range(1, N_OPTIONS + 1)):
            # Well formed, only not an anchor: question 4 is always followed by question 5, which the
            # anchor test cannot tell from an option 5.
            good[items[j].number] = (items[j].text, tuple(it.text for it in items[j + 1 : end]))
        else:
            bad[items[j].number] = f"expected options 1-{N_OPTIONS}, found {found}"
    last_found = items[headers[-1]].number if headers else after
    if before is not None:
        for missing in range(last_found + 1, before):
            bad[missing] = "not found in booklet"


def parse_answer_key(text: str) -> tuple[dict[int, int | None], set[int]]:
    """Return ({question: 1-based answer, or None if annulled}, {questions with conflicting entries}).

    Lines hold one or more "question answer" pairs (keys are often printed as several columns of pairs);
    anything that is not such a pair (titles, "Versión 0", years) is skipped.
    """
    key: dict[int, int | None] = {}
    conflicts: set[int] = set()
    for line in text.splitlines():
        tokens = line.split()
        i = 0
        while i + 1 < len(tokens):
            question, answer = tokens[i].rstrip(".:)-"), tokens[i + 1].lower()
            if question.isdigit() and len(question) <= 3 and (answer in _ANNULLED or answer in {"1", "2", "3", "4"}):
                number = int(question)
                value = None if answer in _ANNULLED else int(answer)
                if number in key and key[number] != value:
                    conflicts.add(number)
                key.setdefault(number, value)
                i += 2
            else:
                i += 1
    return key, conflicts


def parse_exam(
    booklet_text: str,
    key_text: str,
    *,
    exam_id: int,
    year: int,
    category: str,
    ignore: Iterable[str] = (),
) -> tuple[list[ExamQuestion], ParseReport]:
    """Join a booklet with its answer key; annulled and unparseable questions are counted, never raised."""
    good, bad = parse_booklet(booklet_text, ignore)
    key, conflicts = parse_answer_key(key_text)
    questions: list[ExamQuestion] = []
    annulled: list[int] = []
    misparsed: dict[int, str] = {}
    for number in sorted({*good, *bad, *key}):
        if number in key and key[number] is None:
            # Annulled wins over a parse failure: the question is out of CareQA either way, and the
            # paper reports impugned questions separately from the 23 misparsed ones.
            annulled.append(number)
        elif number in bad:
            misparsed[number] = bad[number]
        elif number not in key:
            misparsed[number] = "missing from answer key"
        elif number in conflicts:
            misparsed[number] = "conflicting answer-key entries"
        elif number not in good:
            misparsed[number] = "not found in booklet"
        else:
            text, options = good[number]
            questions.append(
                ExamQuestion(exam_id, number, text, options, key[number], year, category)  # type: ignore[arg-type]
            )
    return questions, ParseReport(len(questions), tuple(annulled), misparsed)


def parse_exam_pdf(
    booklet_pdf: Path | str,
    key_pdf: Path | str,
    *,
    exam_id: int,
    year: int,
    category: str,
    ignore: Iterable[str] = (),
) -> tuple[list[ExamQuestion], ParseReport]:
    return parse_exam(
        extract_pdf_text(booklet_pdf),
        extract_pdf_text(key_pdf),
        exam_id=exam_id,
        year=year,
        category=category,
        ignore=ignore,
    )
