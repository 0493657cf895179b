"""Paired comparisons against the reference libraries (statsmodels, scipy) and brute-force enumeration."""

from __future__ import annotations

import itertools
import os
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from careval.analysis.statistics.comparisons import (
    Block,
    ComparisonsJob,
    Draws,
    block_seed,
    compare_block,
    compare_models,
    exact_permutation_p,
    mcnemar_exact,
    model_sums,
)
from careval.analysis.statistics.multiplicity import adjust
from careval.analysis.statistics.significance_groups import compact_letter_display, outcome
from careval.analysis.statistics.two_level import GenerationNoise
from careval.schemas import COMPARISON_SCHEMA


def job(**kw) -> ComparisonsJob:
    settings = dict(
        model_sets={"all": ("a", "b")},
        resamples=2000,
        permutations=2000,
        exact_limit=20,
        confidence=0.95,
        alpha=0.05,
        power=0.8,
        seed=7,
        two_level=False,
    )
    settings.update(kw)
    return ComparisonsJob(**settings)


def block(values: np.ndarray, weights: np.ndarray | None = None) -> Block:
    values = np.asarray(values, float)
    weights = np.ones_like(values) if weights is None else weights
    return Block(
        [f"m{i}" for i in range(len(values))],
        [f"s{j:04d}" for j in range(values.shape[1])],
        values,
        weights,
        np.isfinite(values),
        np.ones(values.shape, bool),
    )


def draws(n: int, seed: int = 0, resamples: int = 2000) -> Draws:
    return Draws.draw(np.random.default_rng(seed), n, resamples, 2000)


def table(values: dict[str, list[float]], metric: str, benchmark: str = "bench", statuses=None) -> pl.DataFrame:
    rows = []
    for model, vals in values.items():
        for j, v in enumerate(vals):
            status = "ok" if statuses is None else statuses[model][j]
            rows.append((model, benchmark, "open", metric, f"s{j:04d}", v, status, 1.0))
    return pl.DataFrame(
        rows, schema=["model", "benchmark", "task", "metric", "id", "value", "status", "weight"], orient="row"
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_mcnemar_equals_statsmodels_exact(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    ours = mcnemar_exact(a[None], b[None], np.ones((1, 40), bool))[0]
    confusion = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
                 [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]  # fmt: skip
    assert ours == pytest.approx(mcnemar(confusion, exact=True).pvalue, abs=1e-12)


def test_exact_permutation_equals_brute_force():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=9), rng.normal(size=9) + 0.4
    sums = model_sums(block(np.vstack([a, b])), geometric=False)
    p, count = exact_permutation_p(sums, np.array([0, 1]))
    d = a - b
    observed = abs(d.mean())
    flips = [abs(np.mean(np.array(signs) * d)) for signs in itertools.product([1, -1], repeat=9)]
    assert count == 2**9
    assert p == pytest.approx(np.mean([f >= observed - 1e-12 for f in flips]), abs=1e-12)
    # scipy's exact permutation test of the paired mean difference agrees too
    res = stats.permutation_test(
        (a, b), lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
    )
    assert p == pytest.approx(res.pvalue, abs=1e-9)


def test_geometric_exact_permutation_equals_brute_force():
    """A corpus perplexity (weighted geometric mean): every swap pattern recomputes the corpus statistic."""
    rng = np.random.default_rng(5)
    a, b = rng.uniform(2, 30, 7), rng.uniform(2, 30, 7)
    w = rng.integers(1, 20, 7).astype(float)
    sums = model_sums(block(np.vstack([a, b]), np.vstack([w, w])), geometric=True)
    p, _ = exact_permutation_p(sums, np.array([0, 1]))

    def corpus(v):
        return np.exp(np.sum(w * np.log(v)) / w.sum())

    observed = abs(corpus(a) - corpus(b))
    hits = []
    for swap in itertools.product([0, 1], repeat=7):
        s = np.array(swap, bool)
        hits.append(abs(corpus(np.where(s, b, a)) - corpus(np.where(s, a, b))) >= observed - 1e-12)
    assert p == pytest.approx(np.mean(hits), abs=1e-12)


def test_bootstrap_interval_equals_scipy_on_same_indices():
    rng = np.random.default_rng(11)
    a, b = rng.normal(0.5, 0.2, 60), rng.normal(0.45, 0.2, 60)
    spec = job(resamples=999)
    ours = compare_block(block(np.vstack([a, b])), np.array([[0, 1]]), "rouge1", spec, draws(60, 42, 999))
    ref = stats.bootstrap(
        (a, b),
        lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=999,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(42),
    )
    assert ours["ci_low"][0] == pytest.approx(ref.confidence_interval.low, abs=1e-9)
    assert ours["ci_high"][0] == pytest.approx(ref.confidence_interval.high, abs=1e-9)
    assert ours["diff"][0] == pytest.approx(np.mean(a - b), abs=1e-12)
    # on its own draws, within Monte Carlo error of scipy's
    own = stats.bootstrap(
        (a, b),
        lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=999,
        method="percentile",
        rng=np.random.default_rng(1),
    )
    se = np.std(a - b, ddof=1) / np.sqrt(60)
    assert ours["ci_low"][0] == pytest.approx(own.confidence_interval.low, abs=0.25 * se)
    assert ours["ci_high"][0] == pytest.approx(own.confidence_interval.high, abs=0.25 * se)


@pytest.mark.parametrize("seed", range(5))
def test_holm_and_bh_equal_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.1, 12), rng.uniform(0, 1, 12), [0.02, 0.02, np.nan]])  # ties and a NaN
    finite = np.isfinite(p)
    for method in ("holm", "fdr_bh"):
        expected = multipletests(p[finite], method=method)[1]
        np.testing.assert_allclose(adjust(p, method)[finite], expected, atol=1e-15)
        assert np.isnan(adjust(p, method)[-1])


def test_effect_size_and_mde_equal_hand_and_statsmodels():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0.6, 0.1, 50), rng.normal(0.5, 0.1, 50)
    out = compare_block(block(np.vstack([a, b])), np.array([[0, 1]]), "rouge1", job(), draws(50))
    d = a - b
    assert out["effect_size"][0] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-10)
    es = TTestPower().solve_power(effect_size=None, nobs=50, alpha=0.05, power=0.8, alternative="two-sided")
    assert out["mde"][0] == pytest.approx(es * d.std(ddof=1), rel=1e-8)
    # at that difference the paired t-test has 80% power (statsmodels' power, the other way round)
    assert TTestPower().power(out["mde"][0] / d.std(ddof=1), 50, 0.05) == pytest.approx(0.8, abs=1e-6)


def test_large_difference_significant_identical_never():
    rng = np.random.default_rng(4)
    base = rng.uniform(0.2, 0.6, 200)
    values = {"a": list(base + 0.3), "b": list(base + rng.normal(0, 0.02, 200)), "c": list(base)}
    spec = job(model_sets={"all": ("a", "b", "c")}, resamples=500, permutations=500)
    out = compare_models(table(values, "rouge1"), spec)
    assert out.columns == list(COMPARISON_SCHEMA)
    assert out.height == 3
    ab = out.filter((pl.col("model_a") == "a") & (pl.col("model_b") == "b")).row(0, named=True)
    assert ab["p_holm"] < 0.01 and ab["ci_low"] > 0.2 and ab["test"] == "permutation_monte_carlo"
    same = compare_models(table({"x": list(base), "y": list(base)}, "rouge1"), job(model_sets={"s": ("x", "y")}))
    row = same.row(0, named=True)
    assert row["p_value"] == 1.0 and row["diff"] == 0.0 and row["ci_low"] == 0.0 == row["ci_high"]
    acc = rng.integers(0, 2, 100).astype(float)
    same_acc = compare_models(table({"x": list(acc), "y": list(acc)}, "acc"), job(model_sets={"s": ("x", "y")}))
    assert same_acc["p_value"][0] == 1.0 and same_acc["test"][0] == "mcnemar_exact"


def test_failed_samples_dropped_pairwise_and_counted():
    values = {"a": [1.0, 0.5, float("nan"), 0.2, 0.3], "b": [0.9, 0.4, 0.3, float("nan"), 0.1]}
    statuses = {"a": ["ok", "ok", "empty_output", "ok", "ok"], "b": ["ok", "ok", "ok", "parse_error", "ok"]}
    out = compare_models(table(values, "rouge1", statuses=statuses), job()).row(0, named=True)
    assert (out["n"], out["n_dropped"]) == (3, 2)
    assert out["diff"] == pytest.approx(np.mean([0.1, 0.1, 0.2]))
    assert out["test"] == "permutation_exact" and out["resamples"] == 8


def test_pair_order_follows_the_set_and_mirrors():
    rng = np.random.default_rng(8)
    values = {"zeta": list(rng.uniform(size=30)), "alpha": list(rng.uniform(size=30))}
    out = compare_models(table(values, "rouge1"), job(model_sets={"s": ("zeta", "alpha")})).row(0, named=True)
    assert (out["model_a"], out["model_b"]) == ("zeta", "alpha")
    assert out["diff"] == pytest.approx(np.mean(values["zeta"]) - np.mean(values["alpha"]))
    assert out["ci_low"] < out["diff"] < out["ci_high"]


@pytest.mark.benchmark
def test_paper_size_speed():
    """21 models x 26 benchmarks x 20 metrics x 1,000 samples, 1,000 resamples: every comparison, timed."""
    rng = np.random.default_rng(0)
    models = [f"model{i:02d}" for i in range(21)]
    metrics = ["rouge1", "rouge2", "rougeL", "bleu", "sacrebleu", "bertscore_precision", "bertscore_recall"]
    metrics += ["bertscore_f1", "bleurt", "moverscore", "word_perplexity", "byte_perplexity", "bits_per_byte"]
    metrics += ["judge_helpfulness", "judge_harmlessness", "judge_correctness", "judge_relevance", "acc"]
    metrics += ["acc_norm", "judge_factual_validity"]
    n = 1000
    ids = [f"s{j:04d}" for j in range(n)]
    frames = []
    for b in range(26):
        for metric in metrics:
            if metric in ("acc", "acc_norm"):
                values = rng.integers(0, 2, (21, n)).astype(float)
            elif "perplexity" in metric:
                values = rng.uniform(2, 50, (21, n))
            else:
                values = rng.uniform(0, 1, (21, n))
            frames.append(
                pl.DataFrame(
                    {
                        "model": np.repeat(models, n),
                        "benchmark": f"bench{b:02d}",
                        "task": "open",
                        "metric": metric,
                        "id": np.tile(ids, 21),
                        "value": values.ravel(),
                        "status": "ok",
                        "weight": rng.integers(1, 50, 21 * n).astype(float) if "perplexity" in metric else 1.0,
                    }
                )
            )
    samples = pl.concat(frames)
    spec = job(model_sets={"all": tuple(models)}, resamples=1000, permutations=1000)
    start, cpu = time.perf_counter(), time.process_time()
    out = compare_models(samples, spec)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"\npaired comparisons: {out.height} comparisons ({len(metrics)} metrics x 26 benchmarks x 210 pairs, "
          f"{n} samples, 1000 resamples) in {elapsed:.1f} s wall, {cpu:.1f} s CPU (machine load {os.getloadavg()[0]:.1f})")  # fmt: skip
    assert out.height == 26 * 20 * 210


def test_compact_letter_display_separates_exactly_the_significant_pairs():
    """Brute force over random significance patterns: significant pairs share no letter, every other pair shares one."""
    rng = np.random.default_rng(9)
    models = [f"m{i}" for i in range(7)]
    for _ in range(200):
        different = {frozenset(p) for p in itertools.combinations(models, 2) if rng.random() < 0.35}
        letters = compact_letter_display(models, different)
        for a, b in itertools.combinations(models, 2):
            share = bool(set(letters[a]) & set(letters[b]))
            assert share == (frozenset((a, b)) not in different), (a, b, letters, different)
    # a chain: m0 > m1 > m2 with only m0-m2 significant is the textbook "a, ab, b"
    assert compact_letter_display(["x", "y", "z"], {frozenset(("x", "z"))}) == {"x": "a", "y": "ab", "z": "b"}


def test_outcome_by_hand_and_a_comparison_without_a_difference_is_a_tie():
    """Win / loss follows the metric's direction and the adjusted p; a NaN or missing difference or p (a model with
    nothing finite there) is a tie: once cast from NaN it was -2**63, drawn as a significant loss beside "n/a"."""
    nan = float("nan")
    rows = [  # metric, diff (a - b), p_holm, the outcome for a by hand
        ("acc", 0.2, 0.01, 1),
        ("acc", -0.2, 0.01, -1),
        ("acc", 0.2, 0.2, 0),
        ("word_perplexity", 3.0, 0.01, -1),  # lower is better: a's higher perplexity is a loss
        ("word_perplexity", -3.0, 0.01, 1),
        ("acc", nan, nan, 0),
        ("acc", nan, 0.01, 0),
        ("rouge1", 0.1, nan, 0),
        ("rouge1", None, None, 0),
    ]
    frame = pl.DataFrame(
        [r[:3] for r in rows], schema={"metric": pl.String, "diff": pl.Float64, "p_holm": pl.Float64}, orient="row"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered in cast" fails the test
        result = outcome(frame, 0.05, "holm")
    assert result["outcome"].dtype == pl.Int64 and result["outcome"].to_list() == [r[3] for r in rows]


def test_two_level_bootstrap_equals_a_loop_over_the_same_draws():
    rng = np.random.default_rng(12)
    n, r, resamples = 8, 3, 200
    greedy = {"a": rng.uniform(0.3, 0.9, n), "b": rng.uniform(0.3, 0.9, n)}
    answers = {m: rng.uniform(0, 1, (n, r)) for m in greedy}
    answers["b"][2, 1] = np.nan  # a failed sampled answer: drawn among the prompt's others
    repeats = pl.DataFrame(
        [
            (
                m,
                "bench",
                "rouge1",
                f"s{i:04d}",
                k,
                float(answers[m][i, k]),
                "ok" if np.isfinite(answers[m][i, k]) else "empty_output",
            )
            for m in answers
            for i in range(n)
            for k in range(r)
        ],
        schema=["model", "benchmark", "metric", "id", "repeat", "value", "status"],
        orient="row",
    )
    spec = job(resamples=resamples, two_level=True, seed=5)
    out = compare_models(table({m: list(v) for m, v in greedy.items()}, "rouge1"), spec, GenerationNoise(repeats, 5))
    row = out.row(0, named=True)
    # the loop: the benchmark's outer draws, then each model's inner uniforms from the noise's own stream
    outer = Draws.draw(block_seed(5, "bench"), n, resamples, spec.permutations)
    inner = block_seed(6, "bench", "rouge1")
    uniforms = {m: inner.random((resamples, n, r)) for m in ("a", "b")}
    diffs = []
    for b in range(resamples):
        values = {}
        for m in ("a", "b"):
            kept = [answers[m][i][np.isfinite(answers[m][i])] for i in range(n)]
            deviation = [
                np.mean(k[np.floor(uniforms[m][b, i] * len(k)).astype(int)]) - np.mean(k) for i, k in enumerate(kept)
            ]
            values[m] = greedy[m] + np.array(deviation)
        idx = outer.index[b]
        diffs.append(np.mean(values["a"][idx] - values["b"][idx]))
    low, high = np.quantile(diffs, [0.025, 0.975])
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert row["test"] == "two_level_bootstrap" and row["diff"] == pytest.approx(np.mean(greedy["a"] - greedy["b"]))
    below, above = np.mean(np.array(diffs) <= 0), np.mean(np.array(diffs) >= 0)
    assert row["p_value"] == pytest.approx(min(1.0, 2 * min(below, above)))


def test_generation_noise_hides_a_difference_smaller_than_the_sampling_spread():
    rng = np.random.default_rng(13)
    n, r = 100, 11
    base = rng.uniform(0.3, 0.7, n)
    greedy = {"a": base + 0.01, "b": base}  # a steady greedy difference, 1/10 of one sampled answer's spread
    repeats = pl.DataFrame(
        [
            (m, "bench", "rouge1", f"s{i:04d}", k, float(v), "ok")
            for m in greedy
            for i in range(n)
            for k, v in enumerate(rng.uniform(0, 1, r))  # each answer anywhere in [0, 1]
        ],
        schema=["model", "benchmark", "metric", "id", "repeat", "value", "status"],
        orient="row",
    )
    samples = table({m: list(v) for m, v in greedy.items()}, "rouge1")
    plain = compare_models(samples, job(resamples=500, permutations=500)).row(0, named=True)
    noisy = compare_models(samples, job(resamples=500, two_level=True), GenerationNoise(repeats, 1)).row(0, named=True)
    assert plain["p_value"] < 0.01 and plain["ci_low"] > 0
    assert noisy["p_value"] > 0.05 and noisy["ci_low"] < 0 < noisy["ci_high"]
    assert noisy["ci_high"] - noisy["ci_low"] > 3 * (plain["ci_high"] - plain["ci_low"])


def test_the_demo_plans_every_pair_of_its_sets_and_the_pages():
    import yaml

    from careval.plan import build_plan

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "config.yaml").read_text())
    raw.setdefault("analysis", {})["comparisons"] = {"resamples": 300, "two_level": True}
    plan = build_plan(raw)
    spec = plan.comparisons_job()
    assert spec.model_sets["all"] == tuple(sorted(plan.models))
    assert set(spec.model_sets) == {"all", *raw["analysis"]["model_sets"]}
    # the schema fills the rest (one place for the defaults)
    assert (spec.resamples, spec.two_level, spec.permutations, spec.alpha, spec.power) == (300, True, 1000, 0.05, 0.8)
    names = plan.analysis.figure_names()
    for benchmark in plan.benchmarks:
        assert f"comparisons_demo_{benchmark}" in names and f"comparison_groups_demo_{benchmark}" in names
    assert "adjacent_pairs_demo" in names and "cost" in names
    report = plan.analysis.report_job
    assert (report.comparison_alpha, report.comparison_adjust) == (0.05, "holm")
    assert report.cost == {"benchmark": "mcqa_weighted_average", "metric": "acc", "cost": "gpu_seconds"}


def test_corpus_bleu_pairs_recompute_sacrebleu_on_resampled_and_swapped_corpora():
    sacrebleu = pytest.importorskip("sacrebleu")
    from careval.jobs.comparisons import corpus_bleu_block

    rng = np.random.default_rng(21)
    words = [
        "the",
        "patient",
        "has",
        "a",
        "high",
        "fever",
        "and",
        "pain",
        "in",
        "the",
        "left",
        "knee",
        "since",
        "monday",
    ]
    n = 6

    def sentence():
        return " ".join(rng.choice(words, rng.integers(3, 10)))

    refs = [sentence() for _ in range(n)]
    outputs = {m: [sentence() for _ in range(n)] for m in ("a", "b")}
    outputs["a"] = [r if i % 2 else o for i, (r, o) in enumerate(zip(refs, outputs["a"]))]  # a copies some references
    ids = [f"s{i}" for i in range(n)]
    samples = pl.DataFrame({"id": ids, "reference": refs})
    generations = {
        m: pl.DataFrame({"id": ids, "prompt": [""] * n, "output": o, "status": ["ok"] * n}) for m, o in outputs.items()
    }
    generations["b"] = generations["b"].with_columns(
        status=pl.when(pl.col("id") == "s5").then(pl.lit("empty_output")).otherwise(pl.col("status"))
    )
    corpus = corpus_bleu_block(samples, generations, ["a", "b"], min_chars=1)
    spec = job(resamples=50)
    rows = compare_models(
        table({"a": [0.0] * n, "b": [0.0] * n}, "rouge1").filter(pl.lit(False)), spec, corpora={"bench": [corpus]}
    )
    row = rows.row(0, named=True)
    kept = list(range(5))  # s5 failed for b: dropped pairwise

    def bleu(model, index):
        return sacrebleu.corpus_bleu([outputs[model][i] for i in index], [[refs[i] for i in index]]).score

    assert (row["metric"], row["n"], row["n_dropped"]) == ("sacrebleu_corpus", 5, 1)
    assert row["diff"] == pytest.approx(bleu("a", kept) - bleu("b", kept), abs=1e-9)
    # the bootstrap: sacrebleu on each resampled corpus (the benchmark's draws over its 6 ids, the dropped one left out)
    draws = Draws.draw(block_seed(spec.seed, "bench"), n, spec.resamples, spec.permutations)
    diffs = []
    for index in draws.index:
        index = [i for i in index if i in kept]
        diffs.append(bleu("a", index) - bleu("b", index))
    low, high = np.quantile(diffs, [0.025, 0.975])
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    # the exact permutation test: sacrebleu on every swap of the 5 common segments
    observed = abs(row["diff"])
    hits = []
    for swap in itertools.product([0, 1], repeat=5):
        a = [outputs["b"][i] if s else outputs["a"][i] for i, s in zip(kept, swap)]
        b = [outputs["a"][i] if s else outputs["b"][i] for i, s in zip(kept, swap)]
        ref = [[refs[i] for i in kept]]
        hits.append(abs(sacrebleu.corpus_bleu(a, ref).score - sacrebleu.corpus_bleu(b, ref).score) >= observed - 1e-9)
    assert row["test"] == "permutation_exact" and row["p_value"] == pytest.approx(np.mean(hits), abs=1e-12)


def test_bleu_from_statistics_equals_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    from careval.metrics.ngram import bleu_corpus_statistics, bleu_from_statistics

    rng = np.random.default_rng(3)
    words = ["a", "b", "c", "d", "e", "f", "g", "h"]
    preds = [" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(40)]
    refs = [" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(40)]
    stats = bleu_corpus_statistics(preds, refs)
    for _ in range(30):
        index = rng.integers(0, 40, rng.integers(1, 40))
        expected = sacrebleu.corpus_bleu([preds[i] for i in index], [[refs[i] for i in index]]).score
        assert bleu_from_statistics(stats[index].sum(0)) == pytest.approx(expected, abs=1e-9)


def test_weighted_perplexity_bootstrap_recomputes_the_corpus_value():
    """word_perplexity's corpus value is exp(-sum ll / sum words): each resample recomputes it from the drawn samples."""
    rng = np.random.default_rng(17)
    n = 40
    words = rng.integers(5, 60, n).astype(float)
    ll = {m: -words * rng.uniform(1.5, 3.5, n) for m in ("a", "b")}
    ppl = {m: np.exp(-ll[m] / words) for m in ll}  # the per-sample word perplexity; the weight is the word count
    values = np.vstack([ppl["a"], ppl["b"]])
    out = compare_block(
        block(values, np.vstack([words, words])),
        np.array([[0, 1]]),
        "word_perplexity",
        job(resamples=300),
        draws(n, resamples=300),
    )

    def corpus(m, index):
        return np.exp(-ll[m][index].sum() / words[index].sum())

    everything = np.arange(n)
    assert out["diff"][0] == pytest.approx(corpus("a", everything) - corpus("b", everything), rel=1e-12)
    resampled = [corpus("a", index) - corpus("b", index) for index in draws(n, resamples=300).index]
    low, high = np.quantile(resampled, [0.025, 0.975])
    assert (out["ci_low"][0], out["ci_high"][0]) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
