"""Paper Table 6 (appendix D): the Relaxed Cross-Entropy of a few example questions, [Must_have, Nice_to_have], per
model: results/tables/table6_relaxed_perplexity_examples.{csv,md,tex}, in the paper's layout (Question, Must have,
Nice to have, Benchmark, then one column per model under "Relaxed-CrossEntropy").

A cell is the mean Relaxed Cross-Entropy (-sum_i log P(A_i | B_i)) over the statements of each set, as a sample's
`relaxed_cross_entropy` and `relaxed_cross_entropy_nice_to_have` are (careval.jobs.relaxed_perplexity); "n/a" where a
set has no statement or none could be scored."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from careval.analysis.tables.paper_table_files import fmt
from careval.canonical import JobSpec, job_spec
from careval.latex import latex_escape
from careval.metrics.relaxed_perplexity import NICE_TO_HAVE

CAPTION = (
    "Table 6: Open-ended evaluation using Relaxed Perplexity on example questions. Relaxed-CrossEntropy "
    "-sum_i log P(A_i | B_i), [Must_have, Nice_to_have]; lower values indicate the model is more likely to output the "
    "correct answer at some time in the completion."
)


@job_spec
class Table6Job(JobSpec):
    """table6: the columns (one model of a study under one variant each, in input order) and their headers."""

    labels: tuple[str, ...]


def _statements(targets: pl.DataFrame, target_set: str) -> str:
    rows = targets.filter(pl.col("target_set") == target_set).sort("target_index")
    return "; ".join(t for t in rows["target"].to_list() if t)


def cross_entropy(targets: pl.DataFrame, target_set: str) -> float:
    """The mean Relaxed Cross-Entropy of a set's scored statements (NaN where none scored)."""
    values = targets.filter((pl.col("target_set") == target_set) & (pl.col("status") == "ok"))["relaxed_cross_entropy"]
    return float(values.mean()) if values.len() else math.nan  # type: ignore[arg-type]


def build_table6(columns: list[pl.DataFrame], labels: tuple[str, ...]) -> pl.DataFrame:
    """One row per example: question, statements, benchmark, then per column the two cross-entropies."""
    first = columns[0]
    rows = []
    for (position,), targets in first.group_by("example", maintain_order=True):
        question = targets["question"][0] if "question" in targets.columns else ""
        must_set = "must_have" if (targets["target_set"] == "must_have").any() else "reference"
        row = {
            "question": question,
            "must_have": _statements(targets, must_set),
            "nice_to_have": _statements(targets, NICE_TO_HAVE),
            "benchmark": targets["benchmark"][0],
        }
        for label, frame in zip(labels, columns):
            own = frame.filter(pl.col("example") == position)
            row[f"{label}/must_have"] = cross_entropy(own, must_set)
            row[f"{label}/nice_to_have"] = cross_entropy(own, NICE_TO_HAVE)
        rows.append(row)
    return pl.DataFrame(rows)


def _pair(row: dict, label: str) -> str:
    return f"[{fmt(row[f'{label}/must_have'])}, {fmt(row[f'{label}/nice_to_have'])}]"


def to_markdown(table: pl.DataFrame, labels: tuple[str, ...]) -> str:
    header = [
        "Question",
        "Must have",
        "Nice to have",
        "Benchmark",
        *(f"Relaxed-CrossEntropy<br>{label}" for label in labels),
    ]
    lines = [f"**{CAPTION}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.iter_rows(named=True):
        cells = [
            row["question"],
            row["must_have"],
            row["nice_to_have"],
            row["benchmark"],
            *(_pair(row, label) for label in labels),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    return "\n".join([*lines, ""])


def to_latex(table: pl.DataFrame, labels: tuple[str, ...]) -> str:
    width = len(labels)
    body = [
        " & ".join(
            [
                *(
                    latex_escape(row[key]).replace("\n", " ")
                    for key in ("question", "must_have", "nice_to_have", "benchmark")
                ),
                *(_pair(row, label) for label in labels),
            ]
        )
        + r" \\"
        for row in table.iter_rows(named=True)
    ]
    return "\n".join(
        [
            r"% needs \usepackage{booktabs,multirow}",
            r"\begin{table*}[t]",
            r"\centering",
            r"\small",
            rf"\begin{{tabular}}{{p{{5cm}}p{{2.5cm}}p{{2.5cm}}l{'c' * width}}}",
            r"\toprule",
            r"\multirow{2}{*}{Question} & \multirow{2}{*}{Must have} & \multirow{2}{*}{Nice to have} & "
            rf"\multirow{{2}}{{*}}{{Benchmark}} & \multicolumn{{{width}}}{{c}}{{Relaxed-CrossEntropy}} \\",
            rf"\cmidrule(lr){{5-{4 + width}}}",
            " & & & & " + " & ".join(latex_escape(label) for label in labels) + r" \\",
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
            rf"\caption{{{latex_escape(CAPTION)}}}",
            r"\label{tab:table6}",
            r"\end{table*}",
            "",
        ]
    )


def write_table6(job: Table6Job, inputs: list[str], outputs: dict[str, Path]) -> pl.DataFrame:
    """Job: the three files from the examples' per-target values (one input per column)."""
    table = build_table6([pl.read_parquet(path) for path in inputs], job.labels)
    for path in outputs.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(outputs["csv"])
    outputs["md"].write_text(to_markdown(table, job.labels), encoding="utf-8")
    outputs["tex"].write_text(to_latex(table, job.labels), encoding="utf-8")
    return table
