"""CareQA build steps that need no LLM: parse every acquired edition into CareQA-close (Spanish), merge stage counts."""

from __future__ import annotations

import json
from pathlib import Path

from careval.careqa.acquire import edition_name
from careval.careqa.layout import write_careqa
from careval.careqa.parse import parse_exam
from careval.careqa.pdf import read_exam_text


def parse_editions(
    editions: list[dict],
    booklets: list[Path | str],
    keys: list[Path | str],
    spanish_path: Path | str,
    report_path: Path | str,
) -> dict:
    """Parse each edition (booklet + key, in config order) and write CareQA_es plus a per-edition report.

    exam_id is the edition's config `exam_id`, else its 1-based position in the config list.
    """
    if not len(editions) == len(booklets) == len(keys):
        raise ValueError(f"{len(editions)} editions but {len(booklets)} booklets and {len(keys)} answer keys")
    questions, per_edition = [], {}
    for position, (edition, booklet, key) in enumerate(zip(editions, booklets, keys), start=1):
        parsed, report = parse_exam(
            read_exam_text(booklet),
            read_exam_text(key),
            exam_id=int(edition.get("exam_id", position)),
            year=int(edition["year"]),
            category=str(edition["category"]),
            ignore=edition.get("ignore", ()),
        )
        questions.extend(parsed)
        per_edition[edition_name(edition)] = {
            "parsed": report.n_parsed,
            "annulled": report.n_annulled,
            "misparsed": report.n_misparsed,
            "annulled_questions": list(report.annulled),
            # JSON object keys are strings; the reasons say why each question could not be parsed.
            "misparsed_questions": {str(n): why for n, why in sorted(report.misparsed.items())},
        }
    Path(spanish_path).parent.mkdir(parents=True, exist_ok=True)
    frame = write_careqa(questions, spanish_path)
    report = {
        "stage": "parse",
        "parsed": frame.height,
        "annulled": sum(e["annulled"] for e in per_edition.values()),
        "misparsed": sum(e["misparsed"] for e in per_edition.values()),
        "editions": per_edition,
    }
    Path(report_path).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return report


STAGES = (
    "parse",
    "translate",
    "negative_filter",
    "rephrase_iteration1",
    "validate_iteration1",
    "rephrase_iteration2",
    "validate_iteration2",
    "open",
)


def iteration_counts(stages: dict, n: int) -> dict:
    """One rephrasing iteration as a chain: input -> rephrased (a parseable rewrite) -> selected (sent to the
    validator) -> validated (YES) + rejected (NO or no verdict); final: its pairs in CareQA_en_open."""
    rephrase, validate = stages[f"rephrase_iteration{n}"], stages[f"validate_iteration{n}"]
    return {
        "input": rephrase["input"],
        # Iteration 2 has one prompt and no selection: every parseable rewrite goes to the validator.
        "rephrased": rephrase["rephrased"],
        "selected": rephrase.get("selected", rephrase["rephrased"]),
        "validated": validate["validated"],
        "rejected": validate["input"] - validate["validated"],
        "final": stages["open"]["per_iteration"][f"iteration{n}"],
    }


def merge_stage_counts(reports: list[Path | str], out_path: Path | str) -> dict:
    """One file with every stage's counts, in build order, each iteration's chain, and the paper's headline
    chain (close-ended -> after rephrasing -> the open set after the second iteration; paper: 5,621 -> 3,730
    -> 2,769)."""
    stages = {}
    for path in reports:
        report = json.loads(Path(path).read_text())
        stages[report.pop("stage")] = report
    missing = [s for s in STAGES if s not in stages]
    if missing:
        raise ValueError(f"stage counts: no report for {', '.join(missing)} among {[str(p) for p in reports]}")
    counts = {
        "close_es": stages["parse"]["parsed"],
        "close_en": stages["translate"]["translated"],
        "after_negative_filter": stages["negative_filter"]["kept"],
        "after_rephrasing": stages["rephrase_iteration1"]["selected"],
        "open": stages["open"]["open"],
        "iterations": {f"iteration{n}": iteration_counts(stages, n) for n in (1, 2)},
        "stages": stages,
    }
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(counts, indent=2, ensure_ascii=False) + "\n")
    return counts
