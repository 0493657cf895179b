"""The Relaxed Perplexity job of one model x benchmark: samples in, per-sample score rows out.

The estimator (careval.metrics.relaxed_perplexity) takes token ids; this module turns a benchmark's
samples into them (the generation prompt, the targets) through the backend's interface, loads the
backend and writes the parquet.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from pathlib import Path

import polars as pl

from careval.backends import Backend
from careval.backends.cached import job_backend
from careval.metrics.relaxed_perplexity import (
    ESTIMATOR_OPTIONS,
    METRICS,
    NICE_TO_HAVE,
    RelaxedPerplexity,
    relaxed_perplexities,
    resolve_options,
)
from careval.models.spec import ModelSpec
from careval.schemas import RELAXED_PERPLEXITY_TARGET_SCHEMA, SCORE_SCHEMA
from careval.tasks.open import generation_prompts
from careval.tasks.prompts import without_instruction

log = logging.getLogger(__name__)


def _meta(sample: dict) -> dict:
    meta = sample.get("meta")
    try:
        parsed = json.loads(meta) if isinstance(meta, str) and meta else (meta or {})
    except json.JSONDecodeError:
        parsed = {}
    return parsed if isinstance(parsed, dict) else {}


# A sentence ends at . ! or ? followed by whitespace (the reference's own line breaks end one too).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def reference_sentences(reference: str) -> list[str]:
    """The reference cut into its sentences, each a target statement (reference_targets: sentences)."""
    return [part.strip() for part in _SENTENCE_END.split(reference) if part.strip()]


def sample_targets(sample: dict, reference_targets: str = "whole") -> list[str]:
    """The statements a sample is scored against: meta["must_have"] when present (OLAPH/MedLFQA), else the
    reference: whole (one target, as the paper scores MedText and CareQA-Open) or, with reference_targets
    "sentences", each of its sentences (appendix D: other benchmarks' ground truths need preprocessing
    into statements; table 6 shows short ones)."""
    must_have = _meta(sample).get("must_have")
    if isinstance(must_have, list) and must_have:
        return [str(x) for x in must_have]
    reference = sample.get("reference")
    if not isinstance(reference, str):
        return []
    return reference_sentences(reference) if reference_targets == "sentences" else [reference]


def sample_target_sets(sample: dict, reference_targets: str = "whole") -> dict[str, list[str]]:
    """Every target set of a sample: "must_have" (or "reference", see sample_targets), and "nice_to_have" when the
    sample's meta has that list (OLAPH; an empty list is kept, so the sample is counted as empty_target there)."""
    has_must = isinstance(_meta(sample).get("must_have"), list) and bool(_meta(sample)["must_have"])
    sets = {"must_have" if has_must else "reference": sample_targets(sample, reference_targets)}
    nice = _meta(sample).get(NICE_TO_HAVE)
    if has_must and isinstance(nice, list):
        sets[NICE_TO_HAVE] = [str(x) for x in nice]
    return sets


def metric_name(metric: str, target_set: str) -> str:
    return f"{metric}_{NICE_TO_HAVE}" if target_set == NICE_TO_HAVE else metric


def relaxed_perplexity_targets(
    backend: Backend, samples: pl.DataFrame, prompt_template: str, options: dict | None = None, instruction: str = ""
) -> pl.DataFrame:
    """Per (sample, target) values, for the first ``options["limit"]`` samples (all when unset).

    The question is the generation prompt (careval.tasks.open.generation_prompts) as the backend
    generates from it (``prompt_tokens``: chat template, system prompt, the benchmark's `instruction` apart as
    careval.inference.generate gives it, special tokens),
    left-truncated to leave room for max_tokens and the longest target; a target is the
    backend's ``encode`` of " " + the statement. A target that is
    blank gets status ``empty_target``, one that cannot fit ``too_long``, a non-finite
    value ``non_finite``; the value is then NaN.
    """
    opts = resolve_options(options, allowed=(*ESTIMATOR_OPTIONS, "limit", "reference_targets"))
    if opts["limit"]:
        samples = samples.head(int(opts["limit"]))
    params = {k: opts[k] for k in ESTIMATOR_OPTIONS}
    reference_targets = opts["reference_targets"]
    rows: list[dict] = []
    prompts = generation_prompts(samples, prompt_template)
    for sample, prompt in zip(samples.iter_rows(named=True), prompts):
        # every target set of the sample in one pass: the continuations are sampled once
        labelled = [
            (name, i, t.strip())
            for name, texts in sample_target_sets(sample, reference_targets).items()
            for i, t in enumerate(texts)
        ]
        texts = [t for _, _, t in labelled]
        encoded = [backend.encode(" " + t) if t else [] for t in texts]
        statuses = ["ok" if ids else "empty_target" for ids in encoded]
        longest = max((len(ids) for ids in encoded), default=0)
        room = backend.max_length - opts["max_tokens"] - longest
        scored = [i for i, st in enumerate(statuses) if st == "ok"]
        values: dict[int, RelaxedPerplexity] = {}
        if scored and room < 1:
            for i in scored:
                statuses[i] = "too_long"
        elif scored:
            question_ids, untruncated = (
                backend.prompt_tokens(without_instruction(prompt, instruction), room, instruction)
                if instruction
                else backend.prompt_tokens(prompt, room)
            )
            if untruncated > room:
                log.warning("%s: prompt of %d tokens left-truncated to %d", sample["id"], untruncated, room)
            for i, result in zip(
                scored, relaxed_perplexities(backend, question_ids, [encoded[i] for i in scored], **params)
            ):
                values[i] = result
                if not (math.isfinite(result.cross_entropy) and math.isfinite(result.perplexity)):
                    statuses[i] = "non_finite"
        for i, (target_set, index, text) in enumerate(labelled):
            good = statuses[i] == "ok"
            rows.append(
                {
                    "id": sample["id"],
                    "target_set": target_set,
                    "target_index": index,
                    "target": text,
                    "status": statuses[i],
                    "relaxed_cross_entropy": values[i].cross_entropy if good else math.nan,
                    "relaxed_perplexity": values[i].perplexity if good else math.nan,
                }
            )
        for target_set in {name for name, texts in sample_target_sets(sample, reference_targets).items() if not texts}:
            rows.append(
                {
                    "id": sample["id"],
                    "target_set": target_set,
                    "target_index": None,
                    "target": None,
                    "status": "empty_target",
                    "relaxed_cross_entropy": math.nan,
                    "relaxed_perplexity": math.nan,
                }
            )
    return pl.DataFrame(rows, schema=RELAXED_PERPLEXITY_TARGET_SCHEMA)


def score_relaxed_perplexity(
    backend: Backend, samples: pl.DataFrame, prompt_template: str, options: dict | None = None, instruction: str = ""
) -> pl.DataFrame:
    """Per-sample rows in careval's score layout: the mean over the sample's targets of the
    relaxed perplexity and of the relaxed cross-entropy, per target set (:func:`sample_target_sets`).

    A sample none of whose targets could be scored, or any of whose targets gave a
    non-finite value, gets NaN and the (first) failing status, so it is counted, not averaged.
    """
    return scores_from_targets(relaxed_perplexity_targets(backend, samples, prompt_template, options, instruction))


def scores_from_targets(per_target: pl.DataFrame) -> pl.DataFrame:
    """The score rows of per-target values: one value per sample and target set (see score_relaxed_perplexity)."""
    rows = []
    for (sample_id, target_set), group in per_target.group_by("id", "target_set", maintain_order=True):
        statuses = group["status"].to_list()
        ok = [s == "ok" for s in statuses]
        bad = [s for s in statuses if s not in ("ok", "empty_target")]
        if bad or not any(ok):
            status = bad[0] if bad else "empty_target"
        else:
            status = "ok"
        for metric in METRICS:
            values = [v for v, good in zip(group[metric].to_list(), ok) if good]
            value = sum(values) / len(values) if status == "ok" else math.nan
            rows.append(
                {
                    "id": sample_id,
                    "metric": metric_name(metric, target_set),
                    "value": float(value),
                    "status": status,
                    "level": "sample",
                    "weight": 1.0,
                }
            )
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)


def run_relaxed_perplexity(
    samples_path: Path,
    output_path: Path,
    prompt_template: str,
    spec: ModelSpec,
    options: dict | None = None,
    targets_path: Path | None = None,
    record: Path | None = None,
    instruction: str = "",
) -> None:
    """One model x benchmark job: score every sample, write the score rows (and, with `targets_path`, the value of
    every target: relaxed_perplexity_targets). Each sample's sampling and target scoring are calls of the job's
    cached backend (careval.backends.cached); `record`: the job's request counts; `instruction`: the benchmark's."""
    samples = pl.read_parquet(samples_path)
    start = time.perf_counter()
    with job_backend(spec, record) as backend:
        per_target = relaxed_perplexity_targets(backend, samples, prompt_template, options, instruction)
    scores = scores_from_targets(per_target)
    counts = scores.filter(pl.col("metric") == METRICS[0])["status"].value_counts(sort=True)
    print(
        f"relaxed perplexity of {spec.name} on {scores['id'].n_unique()} samples in "
        f"{time.perf_counter() - start:.1f}s; statuses: {dict(zip(*counts.to_dict(as_series=False).values()))}"
    )
    output_path.parent.mkdir(parents=True, exist_ok=True)
    scores.write_parquet(output_path)
    if targets_path is not None:
        targets_path.parent.mkdir(parents=True, exist_ok=True)
        per_target.write_parquet(targets_path)
