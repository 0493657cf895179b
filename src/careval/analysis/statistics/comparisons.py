"""Paired model comparisons: for every benchmark x metric and pair of models, the difference, its paired bootstrap
interval, a paired test (McNemar exact / sign-flip permutation), multiplicity-adjusted p-values, effect size and the
minimum detectable difference.

Everything is vectorised over the pairs of one benchmark x metric and over resamples: a bootstrap resample is a row
of a counts matrix (how often each sample id is drawn), so every pair's resampled sums are one matrix product, and a
permutation is a row of a swap matrix, likewise. The resample indices are drawn once per benchmark x metric (seeded
from the seed and its names) and shared by every pair, as scipy.stats.bootstrap draws them (paired: one index row
per resample applied to both models).
"""

from __future__ import annotations

import dataclasses
import itertools
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import polars as pl

from careval.analysis.statistics.multiplicity import adjust
from careval.canonical import JobSpec, job_spec
from careval.metrics.registry import VALUED_STATUSES, metric_spec
from careval.schemas import COMPARISON_SCHEMA

# resamples are processed in chunks so a paper-sized block (210 pairs x 1000 samples) stays a few hundred MB
CHUNK = 1000


@job_spec
class ComparisonsJob(JobSpec):
    """analysis.comparisons: the settings of the comparisons job and the model sets it compares within."""

    model_sets: dict[str, tuple[str, ...]]
    resamples: int  # paired bootstrap resamples per comparison (the interval)
    permutations: int  # Monte Carlo sign-flip permutations where exact enumeration is too large
    exact_limit: int  # enumerate all 2^n sign flips up to this many pairs
    confidence: float
    alpha: float
    power: float
    seed: int
    two_level: bool  # also resample each prompt's sampled answers (self-consistency samples) where they exist
    # the benchmarks whose corpus sacreBLEU is compared (recomputed from the generations) -> their min_chars
    corpus_bleu: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Block:
    """One benchmark x metric: values (m models x n ids, NaN where not valued), weights, and which rows exist."""

    models: list[str]
    ids: list[str]
    values: np.ndarray
    weights: np.ndarray
    valid: np.ndarray  # a valued status and a finite value
    present: np.ndarray  # the model has a row for the id (any status)


def blocks_of(samples: pl.DataFrame, models: list[str]):
    """Yield (benchmark, metric, Block) for every benchmark x metric of the per-sample table, over `models` (rows)
    and the block's sorted ids (columns); the codes are computed once for the whole table."""
    samples = samples.filter(pl.col("model").is_in(models))
    coded = samples.select(
        "benchmark",
        "metric",
        "id",
        row=pl.col("model").replace_strict({m: i for i, m in enumerate(models)}, return_dtype=pl.Int64),
        col=(pl.col("id").rank("dense").over("benchmark", "metric") - 1).cast(pl.Int64),
        value=pl.col("value").fill_null(np.nan).cast(pl.Float64),
        weight=pl.col("weight").fill_null(1.0).cast(pl.Float64),
        valued=pl.col("status").is_in(VALUED_STATUSES),
    ).sort("benchmark", "metric", "col")
    for (benchmark, metric), rows in coded.group_by("benchmark", "metric", maintain_order=True):
        r, c = rows["row"].to_numpy(), rows["col"].to_numpy()
        ids = rows["id"].gather(np.flatnonzero(np.diff(c, prepend=-1))).to_list()  # sorted by col: first of each
        value = rows["value"].to_numpy()
        ok = rows["valued"].to_numpy() & np.isfinite(value)
        values = np.full((len(models), len(ids)), np.nan)
        weights = np.zeros_like(values)
        present = np.zeros(values.shape, bool)
        present[r, c] = True
        values[r[ok], c[ok]] = value[ok]
        weights[r[ok], c[ok]] = rows["weight"].to_numpy()[ok]
        yield benchmark, metric, Block(models, ids, values, weights, np.isfinite(values), present)


def block_seed(seed: int, benchmark: str, metric: str = "") -> np.random.Generator:
    """The generator of one benchmark (and metric): the same draws whatever else the table holds."""
    return np.random.default_rng([seed, zlib.crc32(f"{benchmark}\0{metric}".encode())])


@dataclass(frozen=True)
class Draws:
    """The resamples of one benchmark's ids, shared by its metrics and pairs: bootstrap index rows (B, n) as draw
    counts (B, n), then sign-flip swap indicators (R, n)."""

    index: np.ndarray
    counts: np.ndarray
    swaps: np.ndarray

    @classmethod
    def draw(cls, rng: np.random.Generator, n: int, resamples: int, permutations: int) -> Draws:
        """The bootstrap indices first (as scipy.stats.bootstrap draws them from `rng`), then the swaps."""
        index = rng.integers(0, n, (resamples, n)) if n else np.zeros((resamples, 0), np.int64)
        swaps = rng.integers(0, 2, (permutations, n), dtype=np.int8).astype(float)
        return cls(index, resample_counts(index, n), swaps)


def resample_counts(index: np.ndarray, n: int) -> np.ndarray:
    """(B, n) index rows -> (B, n) counts: how often each sample is drawn in each resample."""
    b = index.shape[0]
    flat = (index + np.arange(b)[:, None] * n).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)


@cache
def detectable_effect(n: int, alpha: float, power: float) -> float:
    """The standardized paired effect a two-sided paired t-test of n pairs detects with `power` (statsmodels)."""
    if n < 2:
        return float("nan")
    from statsmodels.stats.power import TTestPower  # here: the plan imports this module for ComparisonsJob

    return float(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided"))


def mcnemar_exact(a: np.ndarray, b: np.ndarray, common: np.ndarray) -> np.ndarray:
    """McNemar's exact two-sided p per pair row of 0/1 values: the binomial test of the discordant counts."""
    from scipy import stats  # here: the plan imports this module for ComparisonsJob (scipy.stats: ~1 s)

    n10 = ((a == 1) & (b == 0) & common).sum(-1)
    n01 = ((a == 0) & (b == 1) & common).sum(-1)
    discordant = n10 + n01
    p = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(n10, n01), discordant, 0.5))
    return np.where(discordant > 0, p, 1.0)


def statistic(x: np.ndarray, w: np.ndarray, geometric: bool) -> np.ndarray:
    """The (weighted, or geometric) mean from summed weighted (log-)values `x` and summed weights `w`; NaN where w is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(w > 0, x / np.where(w > 0, w, 1.0), np.nan)
    return np.exp(mean) if geometric else mean


@dataclass(frozen=True)
class ModelSums:
    """Per model (rows) and sample: the weighted (log-)value and weight, zero where the model has no valued score.

    A pair's sums over the samples both scored are linear in these: each model's resampled sum (one matrix product
    for all models) less the samples where the other model failed (a product over those few columns only). So the
    cost of a block is that of its models, not of its pairs."""

    x: np.ndarray
    w: np.ndarray
    valid: np.ndarray
    geometric: bool

    @property
    def unit(self) -> bool:
        return bool(self.valid.all() and (self.w == 1).all())

    def diff(self, xa, wa, xb, wb) -> np.ndarray:
        return statistic(xa, wa, self.geometric) - statistic(xb, wb, self.geometric)


def model_sums(block: Block, geometric: bool) -> ModelSums:
    g = np.log(np.where(block.valid & (block.values > 0), block.values, 1.0)) if geometric else block.values
    w = np.where(block.valid, block.weights, 0.0)
    return ModelSums(np.where(block.valid, w * g, 0.0), w, block.valid, geometric)


def pair_sums_under(sums: ModelSums, pairs: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each pair's (xa, wa, xb, wb) sums, (P, K), weighted by the rows of `counts` (K, n): a bootstrap resample's
    draw counts, or a permutation's swap indicators, over the samples both models of the pair scored."""
    kx = counts @ sums.x.T  # (K, m)
    if sums.unit:  # every weight 1 and every score valued: each model's weight sum is the count of draws
        kw = np.repeat(counts.sum(1, keepdims=True), sums.w.shape[0], axis=1)
    else:
        kw = counts @ sums.w.T
    a, b = pairs[:, 0], pairs[:, 1]
    xa, wa, xb, wb = kx[:, a].T.copy(), kw[:, a].T.copy(), kx[:, b].T.copy(), kw[:, b].T.copy()
    failed = [np.flatnonzero(~row) for row in sums.valid]
    for row, (i, j) in enumerate(pairs):
        # a's samples where b failed (a's own failures are zero already), and b's where a failed
        for own, other, x, w in ((i, j, xa, wa), (j, i, xb, wb)):
            cols = failed[other]
            if cols.size:
                picked = counts[:, cols]
                x[row] -= picked @ sums.x[own, cols]
                w[row] -= picked @ sums.w[own, cols]
    return xa, wa, xb, wb


def bootstrap_diffs(sums: ModelSums, pairs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(P, B): every pair's difference on each resample (rows of draw `counts`, B x n), samples resampled jointly."""
    out = [
        sums.diff(*pair_sums_under(sums, pairs, counts[start : start + CHUNK]))
        for start in range(0, counts.shape[0], CHUNK)
    ]
    return np.concatenate(out, axis=1) if out else np.empty((len(pairs), 0))


def swapped_diffs(sums: ModelSums, pairs: np.ndarray, swaps: np.ndarray) -> np.ndarray:
    """(P, R): every pair's difference with a and b exchanged on the samples where a swap row (R, n) is 1."""
    totals = pair_sums_under(sums, pairs, np.ones((1, sums.x.shape[1])))
    out = []
    for start in range(0, swaps.shape[0], CHUNK):
        xa, wa, xb, wb = pair_sums_under(sums, pairs, swaps[start : start + CHUNK])
        # swapped: a keeps its unswapped samples and takes b's swapped ones, and the other way round
        out.append(sums.diff(totals[0] - xa + xb, totals[1] - wa + wb, totals[2] - xb + xa, totals[3] - wb + wa))
    return np.concatenate(out, axis=1)


def _exceeds(distribution: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Count of |T*| >= |T| per row, with a relative tolerance so that float noise does not break exact ties."""
    edge = np.abs(observed)[:, None] * (1 - 1e-12) - 1e-15
    return (np.abs(distribution) >= edge).sum(-1)


def exact_permutation_p(sums: ModelSums, pair: np.ndarray) -> tuple[float, int]:
    """Two-sided p of one pair by enumerating every swap pattern of its common samples (2^n of them)."""
    i, j = pair
    keep = np.flatnonzero(sums.valid[i] & sums.valid[j])
    n = len(keep)
    one = ModelSums(sums.x[[i, j]][:, keep], sums.w[[i, j]][:, keep], np.ones((2, n), bool), sums.geometric)
    two = np.array([[0, 1]])
    swaps = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    observed = one.diff(*pair_sums_under(one, two, np.ones((1, n))))[:, 0]
    count = _exceeds(swapped_diffs(one, two, swaps), observed)[0]
    return float(count / 2**n), 2**n


def percentile_interval(diffs: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the percentile interval (numpy's linear quantiles, as scipy.stats.bootstrap method='percentile')."""
    alpha = (1 - confidence) / 2
    if diffs.shape[1] == 0:
        nan = np.full(diffs.shape[0], np.nan)
        return nan, nan
    with np.errstate(invalid="ignore"):
        low, high = (
            np.nanquantile(diffs, [alpha, 1 - alpha], axis=1)
            if np.isnan(diffs).any()
            else np.quantile(diffs, [alpha, 1 - alpha], axis=1)
        )
    return low, high


def compare_block(
    block: Block,
    pairs: np.ndarray,
    metric: str,
    job: ComparisonsJob,
    draws: Draws,
    noise=None,
) -> dict[str, np.ndarray]:
    """Every pair (rows of `pairs`, model positions) of one benchmark x metric: n, n_dropped, diff, ci, effect size,
    mde, p_value, test, resamples, on the benchmark's resamples `draws`.

    `noise(draws, common)`: optional, the two-level bootstrap's within-prompt part (P, B) on the resamples, added to the bootstrap differences (see :class:`GenerationNoise`); None where no pair has any."""
    spec = metric_spec(metric)
    geometric = spec.average == "geometric"
    sums = model_sums(block, geometric)
    n_ids = len(block.ids)
    va, vb = pairs[:, 0], pairs[:, 1]
    common = block.valid[va] & block.valid[vb]
    n = common.sum(-1)
    present = block.present[va] | block.present[vb]
    diff = sums.diff(*(t[:, 0] for t in pair_sums_under(sums, pairs, np.ones((1, n_ids)))))
    boot = bootstrap_diffs(sums, pairs, draws.counts)
    if noise is not None:
        noise = noise(draws, common)
    if noise is not None:
        boot = boot + noise

    # a plain mean (unit weights, arithmetic): the standardized paired difference of the per-sample differences;
    # a weighted or geometric (corpus) statistic: its bootstrap standard error scaled to one sample
    plain = not geometric and bool(np.all((block.weights == 1) | ~block.valid))
    if plain:
        d = np.where(common, sums.x[va] - sums.x[vb], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = (np.sum(d * d, -1) - n * diff**2) / (n - 1)
        spread = np.sqrt(np.clip(var, 0, None))
    else:
        spread = _bootstrap_spread(boot, n)

    p = np.full(len(pairs), np.nan)
    test = np.full(len(pairs), "", dtype=object)
    resamples = np.zeros(len(pairs), np.int64)
    if spec.binary:
        a, b = block.values[pairs[:, 0]], block.values[pairs[:, 1]]
        p = mcnemar_exact(a, b, common)
        test[:] = "mcnemar_exact"
    else:
        small = np.flatnonzero(n <= job.exact_limit)
        for row in small:
            p[row], resamples[row] = exact_permutation_p(sums, pairs[row])
        test[small] = "permutation_exact"
        large = np.flatnonzero(n > job.exact_limit)
        if len(large):
            count = _exceeds(swapped_diffs(sums, pairs[large], draws.swaps), diff[large])
            p[large] = (1 + count) / (job.permutations + 1)
            test[large] = "permutation_monte_carlo"
            resamples[large] = job.permutations
    if noise is not None:
        # with the generation noise, the test is the two-level bootstrap's own: twice the smaller tail beyond zero
        finite = np.isfinite(boot)
        below = ((boot <= 0) & finite).sum(-1) / np.maximum(finite.sum(-1), 1)
        above = ((boot >= 0) & finite).sum(-1) / np.maximum(finite.sum(-1), 1)
        p = np.minimum(1.0, 2 * np.minimum(below, above))
        test[:] = "two_level_bootstrap"
        resamples[:] = job.resamples
    return _pair_columns(job, n, present, diff, boot, spread, p, test, resamples)


def _bootstrap_spread(boot: np.ndarray, n: np.ndarray) -> np.ndarray:
    """A weighted or corpus statistic's per-sample spread: its bootstrap standard error scaled to one sample."""
    if boot.shape[1] < 2:
        return np.full(len(n), np.nan)
    with np.errstate(invalid="ignore"):
        return np.nanstd(boot, axis=1, ddof=1) * np.sqrt(n)


def _pair_columns(job, n, present, diff, boot, spread, p, test, resamples) -> dict[str, np.ndarray]:
    """The comparison columns of every pair: the bootstrap interval, the effect size (diff over the per-sample
    spread) and the minimum detectable difference at the job's alpha and power; no p-value where no sample is shared."""
    low, high = percentile_interval(boot, job.confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = np.where(spread > 0, diff / np.where(spread > 0, spread, 1.0), np.where(diff == 0, 0.0, np.nan))
    mde = np.array([detectable_effect(int(k), job.alpha, job.power) for k in n]) * spread
    return {
        "n": n,
        "n_dropped": present.sum(-1) - n,
        "diff": diff,
        "ci_low": low,
        "ci_high": high,
        "effect_size": effect,
        "mde": mde,
        "p_value": np.where(n > 0, p, np.nan),
        "test": test,
        "resamples": resamples,
    }


@dataclass(frozen=True)
class CorpusBlock:
    """A corpus-level metric of one benchmark (corpus sacreBLEU): per model and id the segment statistics whose sums
    make the corpus value, and which pairs the scorer kept (ok). `statistic`: summed statistics (..., k) -> value."""

    metric: str
    ids: list[str]
    stats: np.ndarray  # (m, n, k)
    ok: np.ndarray  # (m, n)
    statistic: Callable[[np.ndarray], np.ndarray]


def compare_corpus_block(corpus: CorpusBlock, pairs: np.ndarray, job: ComparisonsJob, draws: Draws) -> dict:
    """compare_block for a corpus statistic: the paired bootstrap and sign-flip permutations recompute the corpus value
    of each resampled (swapped) corpus from its summed segment statistics; effect size and mde from the bootstrap
    standard error, as for a weighted statistic."""
    a, b = pairs[:, 0], pairs[:, 1]
    common = corpus.ok[a] & corpus.ok[b]
    n = common.sum(-1)
    k = corpus.stats.shape[-1]
    sa = np.where(common[..., None], corpus.stats[a], 0.0)  # (P, n, k)
    sb = np.where(common[..., None], corpus.stats[b], 0.0)
    flat_a = sa.transpose(1, 0, 2).reshape(sa.shape[1], -1)  # (n, P*k)
    flat_b = sb.transpose(1, 0, 2).reshape(sb.shape[1], -1)

    def value(sums):  # (R, P*k) -> (P, R)
        return corpus.statistic(sums.reshape(sums.shape[0], len(pairs), k)).T

    total_a, total_b = flat_a.sum(0, keepdims=True), flat_b.sum(0, keepdims=True)
    diff = (value(total_a) - value(total_b))[:, 0]
    boot = value(draws.counts @ flat_a) - value(draws.counts @ flat_b)
    p = np.full(len(pairs), np.nan)
    test = np.full(len(pairs), "", dtype=object)
    resamples = np.zeros(len(pairs), np.int64)
    for row in range(len(pairs)):
        keep = np.flatnonzero(common[row])
        if len(keep) <= job.exact_limit:
            swaps = ((np.arange(2 ** len(keep))[:, None] >> np.arange(len(keep))[None, :]) & 1).astype(float)
            one_a, one_b = sa[row, keep], sb[row, keep]
            moved = swaps @ (one_b - one_a)  # (2^n, k): what a gains from b on the swapped segments
            t = corpus.statistic(one_a.sum(0) + moved) - corpus.statistic(one_b.sum(0) - moved)
            p[row], resamples[row], test[row] = (
                _exceeds(t[None], diff[row : row + 1])[0] / len(t),
                len(t),
                "permutation_exact",
            )
    large = np.flatnonzero(n > job.exact_limit)
    if len(large):
        moved = draws.swaps @ (flat_b - flat_a)  # (R, P*k)
        t = value(total_a + moved) - value(total_b - moved)
        p[large] = (1 + _exceeds(t[large], diff[large])) / (job.permutations + 1)
        test[large], resamples[large] = "permutation_monte_carlo", job.permutations
    present = corpus.ok[a] | corpus.ok[b]
    return _pair_columns(job, n, present, diff, boot, _bootstrap_spread(boot, n), p, test, resamples)


def all_pairs(model_sets: dict[str, tuple[str, ...]]) -> tuple[list[str], dict[str, list[tuple[str, str]]]]:
    """The models of every set, sorted, and each set's unordered pairs (in the set's order: a before b)."""
    models = sorted({m for members in model_sets.values() for m in members})
    return models, {name: list(itertools.combinations(members, 2)) for name, members in model_sets.items()}


def compare_models(
    samples: pl.DataFrame, job: ComparisonsJob, noise_of=None, corpora: dict[str, list[CorpusBlock]] | None = None
) -> pl.DataFrame:
    """Every pair of every model set on every benchmark x metric of the per-sample table (COMPARISON_SCHEMA).

    A pair is compared once on the samples both models scored and shared by every set holding it; p-values are
    adjusted within each model set x benchmark x metric (Holm, Benjamini-Hochberg).
    `noise_of(benchmark, metric, block, pairs)`: the two-level bootstrap's noise function (GenerationNoise) or None;
    `corpora`: benchmark -> its corpus-level metrics' segment statistics over the same models (sorted), compared by
    recomputing the corpus value."""
    models, set_pairs = all_pairs(job.model_sets)
    pair_list = sorted({tuple(sorted(p)) for pairs in set_pairs.values() for p in pairs})
    if not pair_list:
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    position = {m: i for i, m in enumerate(models)}
    pairs = np.array([(position[a], position[b]) for a, b in pair_list])
    frames = []
    drawn: dict = {}

    def draws_of(benchmark: str, ids: list[str]) -> Draws:
        key = (benchmark, len(ids), hash(tuple(ids)))
        if key not in drawn:  # a benchmark's metrics share its draws (the same ids, resampled jointly)
            drawn.clear()
            drawn[key] = Draws.draw(block_seed(job.seed, benchmark), len(ids), job.resamples, job.permutations)
        return drawn[key]

    def results():
        for benchmark, metric, block in blocks_of(samples, models):
            noise = noise_of(benchmark, metric, block, pairs) if noise_of is not None else None
            yield benchmark, metric, compare_block(block, pairs, metric, job, draws_of(benchmark, block.ids), noise)
        for benchmark, blocks in sorted((corpora or {}).items()):
            for corpus in blocks:
                yield (
                    benchmark,
                    corpus.metric,
                    compare_corpus_block(corpus, pairs, job, draws_of(benchmark, corpus.ids)),
                )

    at = {p: i for i, p in enumerate(pair_list)}
    for benchmark, metric, result in results():
        for set_name, members in set_pairs.items():
            if not members:
                continue
            rows_at = np.array([at[tuple(sorted(p))] for p in members])
            sign = np.array([1.0 if p[0] <= p[1] else -1.0 for p in members])
            p = result["p_value"][rows_at]
            low, high = result["ci_low"][rows_at], result["ci_high"][rows_at]
            frames.append(
                pl.DataFrame(
                    {
                        "model_set": set_name,
                        "model_a": [p[0] for p in members],
                        "model_b": [p[1] for p in members],
                        "benchmark": benchmark,
                        "metric": metric,
                        "n": result["n"][rows_at],
                        "n_dropped": result["n_dropped"][rows_at],
                        "diff": sign * result["diff"][rows_at],
                        # a swapped pair's interval is the mirror image of the sorted pair's
                        "ci_low": np.where(sign > 0, low, -high),
                        "ci_high": np.where(sign > 0, high, -low),
                        "effect_size": sign * result["effect_size"][rows_at],
                        "mde": result["mde"][rows_at],
                        "p_value": p,
                        "p_holm": adjust(p, "holm"),
                        "p_bh": adjust(p, "fdr_bh"),
                        "test": result["test"][rows_at].astype(str),
                        "resamples": result["resamples"][rows_at],
                    },
                    schema_overrides=COMPARISON_SCHEMA,
                )
            )
    if not frames:
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    return pl.concat(frames).cast(COMPARISON_SCHEMA).select(list(COMPARISON_SCHEMA))
