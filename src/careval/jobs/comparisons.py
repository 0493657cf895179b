"""The comparisons job: every pair of models of each model set, compared on the per-sample table
(careval.analysis.statistics.comparisons) and on corpus sacreBLEU, written as results/summary/comparisons.parquet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from careval.analysis.statistics.comparisons import (
    ComparisonsJob,
    CorpusBlock,
    all_pairs,
    compare_models,
)
from careval.analysis.statistics.two_level import GenerationNoise
from careval.metrics.ngram import BLEU_STATISTICS, bleu_corpus_statistics, bleu_from_statistics
from careval.schemas import REPEAT_SCORE_SCHEMA
from careval.scoring import _pairs as scored_pairs  # the pairs exactly as the bleu scorer keeps them

CORPUS_BLEU = "sacrebleu_corpus"


def read_repeats(paths: list[Path]) -> pl.DataFrame:
    """The self-consistency score files (<results>/consistency_*/<model>/<benchmark>.parquet), stacked with the
    model and benchmark their path names."""
    frames = [
        pl.read_parquet(path)
        .cast(pl.Schema(REPEAT_SCORE_SCHEMA))
        .select(pl.lit(path.parent.name).alias("model"), pl.lit(path.stem).alias("benchmark"), *REPEAT_SCORE_SCHEMA)
        for path in map(Path, paths)
    ]
    schema = {"model": pl.String, "benchmark": pl.String, **REPEAT_SCORE_SCHEMA}
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def corpus_bleu_block(samples: pl.DataFrame, generations: dict[str, pl.DataFrame], models: list[str], min_chars: int):
    """Corpus sacreBLEU's segment statistics of every model (rows, in `models` order) on one benchmark's ids; a model
    without generations, and a pair the scorer drops (failed, too short), has none."""
    ids = sorted({i for frame in generations.values() for i in frame["id"].to_list()})
    at = {i: j for j, i in enumerate(ids)}
    stats = np.zeros((len(models), len(ids), BLEU_STATISTICS))
    ok = np.zeros((len(models), len(ids)), bool)
    for row, model in enumerate(models):
        if model not in generations:
            continue
        frame = generations[model]
        predictions, references, kept, _ = scored_pairs(samples, frame, min_chars)
        cols = np.array([at[i] for i, good in zip(frame["id"].to_list(), kept) if good], int)
        if len(cols):
            stats[row, cols] = bleu_corpus_statistics(predictions, references)
            ok[row, cols] = True
    return CorpusBlock(CORPUS_BLEU, ids, stats, ok, bleu_from_statistics)


def write_comparisons(
    samples: Path,
    repeats: list[Path],
    output: Path,
    job: ComparisonsJob,
    datasets: dict[str, Path] | None = None,
    generations: dict[tuple[str, str], Path] | None = None,
) -> pl.DataFrame:
    """samples: the per-sample table; repeats: self-consistency score files (read only when job.two_level);
    datasets / generations: the normalised samples of each job.corpus_bleu benchmark and each (model, benchmark)'s
    generations, whose corpus sacreBLEU is compared."""
    noise = GenerationNoise(read_repeats(repeats), job.seed) if job.two_level and repeats else None
    models = all_pairs(job.model_sets)[0]
    corpora = {}
    for benchmark, min_chars in job.corpus_bleu.items():
        if datasets is None or benchmark not in datasets:
            continue
        frames = {
            m: pl.read_parquet(path) for (m, b), path in (generations or {}).items() if b == benchmark and m in models
        }
        corpora[benchmark] = [corpus_bleu_block(pl.read_parquet(datasets[benchmark]), frames, models, min_chars)]
    table = compare_models(pl.read_parquet(samples), job, noise, corpora)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.write_parquet(output)
    return table
