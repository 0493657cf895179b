"""CareQA dataset statistics (paper appendix A): Table 4, questions per category and year (figures 5-6) and the
human review's correctness per category (figure 7), computed from the closed and open sets and the filled sheets."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import polars as pl

from careval.canonical import JobSpec, job_spec
from careval.careqa.review import REVIEW_KINDS, agreement_stats, read_sheets
from careval.datasets.benchmark import REPO_ROOT
from careval.latex import latex_escape
from careval.schemas import CAREQA_CATEGORIES_PER_YEAR_SCHEMA, CAREQA_REVIEW_CORRECTNESS_SCHEMA, CAREQA_TABLE4_SCHEMA
from careval.textio import TextDecodeError, read_text

# Table 4's columns (Q: the question, A: the answer; lengths in tokens of the named tokenizer)
TABLE4_COLUMNS = {
    "category": "Category",
    "questions": "Questions",
    "max_q_tokens": "Max Q tokens",
    "avg_q_tokens": "Avg Q tokens",
    "max_a_tokens": "Max A tokens",
    "avg_a_tokens": "Avg A tokens",
    "vocabulary": "Vocabulary",
}
TOTAL = "Total"


class CareqaFileError(ValueError):
    """A CareQA file that cannot be read as the closed or open set; one line naming the file, row and column."""


def _rows(path: Path) -> list[dict]:
    """The records of a .parquet, .jsonl or .json file (a JSON array, or one object per line as the hub serves)."""
    if path.suffix == ".parquet":
        try:
            return pl.read_parquet(path).to_dicts()
        except OSError as error:
            raise CareqaFileError(f"{path}: cannot read ({error})") from None
    try:
        text = read_text(path)
    except OSError as error:
        raise CareqaFileError(f"{path}: cannot read ({error.strerror})") from None
    except TextDecodeError as error:
        raise CareqaFileError(str(error)) from None
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise CareqaFileError(f"{path}: line {error.lineno}: not JSON ({error.msg})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise CareqaFileError(f"{path}: line {number}: not JSON ({error.msg})") from None
    return rows


def _answer(row: dict, kind: str) -> object:
    """The answer text: the correct option of a closed row (published op1-op4 + cop, or the canonical options +
    0-based answer), the answer of an open row (published `answer`, canonical `reference`)."""
    canonical = "options" in row  # careval's samples (resources/datasets/<benchmark>.parquet), else published
    if kind == "open":
        return row.get("reference") if canonical else row.get("answer")
    if canonical:
        options, index = row["options"] or [], row.get("answer")
        return options[index] if isinstance(index, int) and 0 <= index < len(options) else None
    cop = row.get("cop")
    return row.get(f"op{cop}") if isinstance(cop, int) else None


def read_careqa(path: Path | str, kind: str) -> pl.DataFrame:
    """question, answer, year, category of every row of a closed or open CareQA file: the published
    HPAI-BSC/CareQA layout (the build's output too) or careval's canonical samples (category and year in `meta`)."""
    if kind not in ("closed", "open"):
        raise ValueError(f"kind must be 'closed' or 'open', got {kind!r}")
    path = Path(path)
    records = []
    for number, row in enumerate(_rows(path), start=1):
        if isinstance(row.get("meta"), str):
            row = {**json.loads(row["meta"]), **row}
        record = {
            "question": row.get("question"),
            "answer": _answer(row, kind),
            "year": row.get("year"),
            "category": row.get("category"),
        }
        for column, value in record.items():
            if value is None or (isinstance(value, str) and not value.strip()):
                raise CareqaFileError(f"{path}: row {number}: no {column} (a {kind} CareQA row needs one)")
        try:
            record["year"] = int(record["year"])
        except (TypeError, ValueError):
            raise CareqaFileError(f"{path}: row {number}: year {record['year']!r} is not a number") from None
        records.append(record)
    schema = {"question": pl.String, "answer": pl.String, "year": pl.Int64, "category": pl.String}
    return pl.DataFrame(records, schema=schema)


def table4(frame: pl.DataFrame, tokenize: Callable[[str], Sequence]) -> pl.DataFrame:
    """Per category and in total: questions, longest and mean question and answer lengths (tokens) and the
    vocabulary size (distinct tokens over the questions and answers)."""
    q_tokens = [list(tokenize(text)) for text in frame["question"]]
    a_tokens = [list(tokenize(text)) for text in frame["answer"]]
    groups: dict[str, list[int]] = {}
    for index, category in enumerate(frame["category"]):
        groups.setdefault(category, []).append(index)
    rows = []
    for category, members in [*sorted(groups.items()), (TOTAL, list(range(frame.height)))]:
        q_lengths = [len(q_tokens[i]) for i in members]
        a_lengths = [len(a_tokens[i]) for i in members]
        vocabulary = {token for i in members for token in (*q_tokens[i], *a_tokens[i])}
        rows.append(
            {
                "category": category,
                "questions": len(members),
                "max_q_tokens": max(q_lengths, default=0),
                "avg_q_tokens": sum(q_lengths) / len(members) if members else float("nan"),
                "max_a_tokens": max(a_lengths, default=0),
                "avg_a_tokens": sum(a_lengths) / len(members) if members else float("nan"),
                "vocabulary": len(vocabulary),
            }
        )
    return pl.DataFrame(rows, schema=CAREQA_TABLE4_SCHEMA)


def categories_per_year(frames: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Questions per set (closed, open), year and category: figures 5 and 6."""
    parts = [
        frame.group_by("year", "category")
        .len("questions")
        .select(pl.lit(name).alias("set"), "year", "category", "questions")
        for name, frame in frames.items()
    ]
    table = pl.concat(parts) if parts else pl.DataFrame(schema=CAREQA_CATEGORIES_PER_YEAR_SCHEMA)
    return table.cast(pl.Schema(CAREQA_CATEGORIES_PER_YEAR_SCHEMA)).sort("set", "year", "category")


def _sheet_categories(paths: Iterable[Path | str]) -> dict[str, str]:
    categories: dict[str, str] = {}
    for path in paths:
        with io.StringIO(read_text(path), newline="") as handle:
            for row in csv.DictReader(handle):
                if (row.get("category") or "").strip():
                    categories[(row.get("item_id") or "").strip()] = row["category"].strip()
    return categories


def review_correctness(sheets: Mapping[str, Sequence[Path | str]], min_reviewers: int = 3) -> pl.DataFrame:
    """Figure 7: per review kind and category, the share of reviewed items tagged correct by at least one, at least
    two and all reviewers (careqa.review.agreement_stats, the rows of Table 2), from the filled sheets."""
    rows = []
    for kind in REVIEW_KINDS:
        paths = list(sheets.get(kind) or [])
        if not paths:
            continue
        labels, categories = read_sheets(paths), _sheet_categories(paths)
        by_category: dict[str, dict] = {}
        for item, votes in labels.items():
            by_category.setdefault(categories.get(item, "unknown"), {})[item] = votes
        for category, items in sorted(by_category.items()):
            stats = agreement_stats(items, min_reviewers)
            rows.append(
                {
                    "kind": kind,
                    "category": category,
                    "items": stats.n_items,
                    "at_least_one": stats.at_least_one,
                    "at_least_two": stats.at_least_two,
                    "all_reviewers": stats.all_reviewers,
                }
            )
    return pl.DataFrame(rows, schema=CAREQA_REVIEW_CORRECTNESS_SCHEMA)


def _cell(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def table_markdown(table: pl.DataFrame, headers: Mapping[str, str], caption: str) -> str:
    lines = [f"**{caption}**", "", "| " + " | ".join(headers[c] for c in table.columns) + " |"]
    lines.append("|" + "|".join("---" if table[c].dtype == pl.String else "---:" for c in table.columns) + "|")
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table.iter_rows()]
    return "\n".join(lines) + "\n"


def table_latex(table: pl.DataFrame, headers: Mapping[str, str], caption: str, label: str) -> str:
    """A booktabs table; the Total row, where there is one, below a midrule."""
    align = "".join("l" if table[c].dtype == pl.String else "r" for c in table.columns)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(latex_escape(headers[c]) for c in table.columns) + r" \\",
        r"\midrule",
    ]
    for row in table.iter_rows():
        if row[0] == TOTAL:
            lines.append(r"\midrule")
        lines.append(" & ".join(latex_escape(_cell(v)) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def table4_caption(tokenizer: str) -> str:
    return (
        "Table 4: CareQA (close-ended) dataset statistics; Q and A: the question and the correct answer, "
        f"lengths in tokens of the {tokenizer} tokenizer; vocabulary: distinct tokens of the questions and answers"
    )


def write_table4(
    table: pl.DataFrame, tokenizer: str, csv_path: Path | str, md_path: Path | str, tex_path: Path | str
) -> None:
    """Table 4 as CSV (exact values), Markdown and LaTeX (booktabs; means to one decimal)."""
    for path in (csv_path, md_path, tex_path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(csv_path)
    caption = table4_caption(tokenizer)
    Path(md_path).write_text(table_markdown(table, TABLE4_COLUMNS, caption))
    Path(tex_path).write_text(table_latex(table, TABLE4_COLUMNS, caption, "tab:careqa_statistics"))


def hf_tokenize(path: str) -> Callable[[str], list[int]]:
    """The token ids of a text under a model's tokenizer (its folder or hub id), without special tokens."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    return lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]


def write_careqa_statistics(
    closed: Path | str,
    open_: Path | str,
    tokenizer_name: str,
    tokenizer_path: str,
    sheets: Mapping[str, Sequence[Path | str]],
    min_reviewers: int,
    outputs: Mapping[str, Path | str],
) -> pl.DataFrame:
    """The statistics job: Table 4 (outputs table_csv, table_md, table_tex), the categories per year of both sets
    (categories, parquet) and the review correctness per category (review, parquet; empty without sheets)."""
    closed_frame, open_frame = read_careqa(closed, "closed"), read_careqa(open_, "open")
    table = table4(closed_frame, hf_tokenize(tokenizer_path))
    write_table4(table, tokenizer_name, outputs["table_csv"], outputs["table_md"], outputs["table_tex"])
    categories_per_year({"closed": closed_frame, "open": open_frame}).write_parquet(outputs["categories"])
    review_correctness(sheets, min_reviewers).write_parquet(outputs["review"])
    return table


def filled_sheets(folder: Path | str | None) -> dict[str, list[Path]]:
    """The filled review sheets, <folder>/<translation|rephrasing>/*.csv, per kind (kinds without any left out;
    folder None, careqa.review.filled_sheets unset: none)."""
    if folder is None:
        return {}
    folder = Path(folder)
    if not folder.is_absolute() and not folder.exists():  # a shipped folder (the demo's), from any working directory
        folder = REPO_ROOT / folder
    found = {kind: sorted((folder / kind).glob("*.csv")) for kind in REVIEW_KINDS}
    return {kind: paths for kind, paths in found.items() if paths}


def filled_sheet_paths(folder: Path | str | None) -> list[str]:
    """Every filled review sheet, kinds in order (the statistics job's inputs: a new sheet remakes it)."""
    sheets = filled_sheets(folder)
    return [str(path) for kind in sorted(sheets) for path in sheets[kind]]


@job_spec
class CareqaStatisticsJob(JobSpec):
    """careqa_statistics: the tokenizer counting Table 4's tokens (its config name and folder or hub id) and the
    reviewers each reviewed item needs (careqa.review.min_reviewers). The sets and sheets are the rule's inputs."""

    tokenizer: str
    tokenizer_path: str
    min_reviewers: int


def statistics_sources(settings: Mapping, benchmarks: Iterable[str], datasets_dir: str, careqa_dir: str) -> dict:
    """careqa.statistics' closed and open sets as files: a benchmark of the run -> its normalised samples; None ->
    the build's CareQA_en / CareQA_en_open; else the file given (relative: the working directory, else the repo)."""
    build = {"closed": f"{careqa_dir}/CareQA_en.parquet", "open": f"{careqa_dir}/CareQA_en_open.parquet"}
    sources = {}
    for kind in ("closed", "open"):
        value = settings.get(kind)
        if value is None:
            sources[kind] = build[kind]
        elif value in set(benchmarks):
            sources[kind] = f"{datasets_dir}/{value}.parquet"
        else:
            path = Path(value)
            # as the Elo CSV: a shipped file (the demo's) is found from any working directory
            sources[kind] = str(path if path.is_absolute() or path.exists() else REPO_ROOT / path)
    return sources
