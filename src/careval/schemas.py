"""The column types of every parquet table the pipeline writes, one name per table, grouped by stage.

Each name says which stage's table it is (docs/outputs.md gives the paths). This module imports
nothing of careval, so any layer may read a schema without pulling in the code that writes it.
"""

from __future__ import annotations

import polars as pl

# --- datasets: resources/datasets/<benchmark>.parquet, the canonical sample of every benchmark.
# Nothing downstream of a loader knows a source's own field names.
DATASET_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "id": pl.String,  # unique within a benchmark
    "benchmark": pl.String,  # registry name, e.g. "demo_mcqa"
    "task": pl.String,  # one of careval.datasets.benchmark.TASKS
    "question": pl.String,  # the prompt body (question, dialogue, text to summarise)
    "context": pl.String,  # optional supporting text (abstract, dialogue); may be null
    "options": pl.List(pl.String),  # the options or class names of a CHOICE_TASKS sample; else null
    "answer": pl.Int64,  # 0-based gold option index; null for text tasks
    "reference": pl.String,  # gold text (answer, note, summary, rendered gold relations); null for choice tasks
    "meta": pl.String,  # JSON object with source-specific extras
}

# --- inference: results/generations/<model>/<benchmark>.parquet and results/loglik/...
# prompt_tokens / generated_tokens: what the model read and wrote for the row, as its backend counted (null where
# it counts none), so the cost table reads them instead of loading a tokenizer
GENERATION_SCHEMA = {
    "id": pl.String,
    "prompt": pl.String,
    "output": pl.String,
    "status": pl.String,
    "prompt_tokens": pl.Int64,
    "generated_tokens": pl.Int64,
    # the tokens cut from the left of a prompt longer than the model's window (lm-eval's rule); null: not counted
    "cut_tokens": pl.Int64,
}
# The log-likelihood requests a task builds (one per option, or per reference), then the same rows scored.
LOGLIK_REQUEST_SCHEMA = {
    "id": pl.String,
    "kind": pl.String,
    "option": pl.Int64,
    "context": pl.String,
    "continuation": pl.String,
}
# tokens: the context and continuation tokens the model read for the request (null where its backend counts none);
# cut_tokens: those cut from the left of a context longer than the model's window (lm-eval's rule), not read
LOGLIK_SCHEMA = {**LOGLIK_REQUEST_SCHEMA, "loglik": pl.Float64, "tokens": pl.Int64, "cut_tokens": pl.Int64}

# --- repeats: results/rephrase/... and results/consistency/... (k rephrasings, r sampled answers)
REPEAT_GENERATION_SCHEMA = {"id": pl.String, "repeat": pl.Int64, "output": pl.String, "status": pl.String}
CONSISTENCY_LOGLIK_SCHEMA = {**LOGLIK_SCHEMA, "repeat": pl.Int64}

# --- scoring: results/scores/<model>/<benchmark>/<family>.parquet, every family the same long layout.
# `level` is "sample" or "corpus"; `weight` is what a per-sample value counts for when averaged.
SCORE_SCHEMA = {
    "id": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "status": pl.String,
    "level": pl.String,
    "weight": pl.Float64,
}
# The judge's score rows carry its probabilities of the scores 1..5 (metrics/judge_distribution.py).
JUDGE_PROBABILITY_COLUMNS = ("p1", "p2", "p3", "p4", "p5")
JUDGE_SCORE_SCHEMA = {**SCORE_SCHEMA, **dict.fromkeys(JUDGE_PROBABILITY_COLUMNS, pl.Float64)}
# Relaxed Perplexity per (sample, target) before the per-sample mean that goes into SCORE_SCHEMA.
RELAXED_PERPLEXITY_TARGET_SCHEMA = {
    "id": pl.String,
    "target_set": pl.String,
    "target_index": pl.Int64,
    "target": pl.String,
    "relaxed_cross_entropy": pl.Float64,
    "relaxed_perplexity": pl.Float64,
    "status": pl.String,
}
# A metric on each repeated output (resilience, self-consistency), before the spread.
REPEAT_SCORE_SCHEMA = {
    "id": pl.String,
    "repeat": pl.Int64,
    "metric": pl.String,
    "value": pl.Float64,
    "status": pl.String,
}

# How the judge's verdicts were read, per model x benchmark x rubric (judge.py): n_judged answers sent
# to the judge; of them n_parsed by prometheus-eval's parser, n_from_distribution read from the
# judge's score distribution, n_parse_error neither; n_not_judged failed or empty answers (and
# samples without a reference), never sent.
JUDGE_VERDICTS_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "n_judged": pl.Int64,
    "n_parsed": pl.Int64,
    "n_from_distribution": pl.Int64,
    "n_parse_error": pl.Int64,
    "n_not_judged": pl.Int64,
    "share_parsed": pl.Float64,
    "share_from_distribution": pl.Float64,
}
# --- summary: results/summary/scores.parquet and results/summary/sample_scores.parquet.
# n_skipped: source rows dropped at normalisation (`on_bad_row: skip`), the same for every model of a
# benchmark; null where the normalisation reports were not given (unknown is not zero).
SUMMARY_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "task": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n": pl.Int64,
    "n_failed": pl.Int64,
    "n_skipped": pl.Int64,
}
# The per-sample table the bootstrap resamples: every sample-level score row, labelled.
SUMMARY_SAMPLE_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "task": pl.String,
    "metric": pl.String,
    "id": pl.String,
    "value": pl.Float64,
    "status": pl.String,
    "weight": pl.Float64,
}

# --- analysis: correlations, rankings, resilience/consistency spread.
CORRELATION_SCHEMA = {
    "analysis": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "x": pl.String,
    "y": pl.String,
    "method": pl.String,
    "r": pl.Float64,
    "p_value": pl.Float64,
    # how p_value was computed: permutation_exact (all n! pairings, below 10 models) or scipy's (t_test for Pearson,
    # t_approximation for Spearman, kendall_scipy_auto for Kendall); null where r is undefined
    "p_method": pl.String,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n_models": pl.Int64,
    "agreement": pl.Float64,
}
RANKING_SCHEMA = {
    "benchmark": pl.String,
    "metric": pl.String,
    "model": pl.String,
    "value": pl.Float64,
    "rank": pl.Int64,
}
# The analysis tables over a model set (analysis.model_sets): correlations, rankings, metric clusters.
SET_CORRELATION_SCHEMA = {"model_set": pl.String, **CORRELATION_SCHEMA}
SET_RANKING_SCHEMA = {"model_set": pl.String, **RANKING_SCHEMA}
CLUSTER_SCHEMA = {
    "model_set": pl.String,
    "benchmark": pl.String,
    "method": pl.String,
    "cluster": pl.String,
    "metric": pl.String,
}
SPREAD_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "id": pl.String,
    "metric": pl.String,
    "n": pl.Int64,
    "mean": pl.Float64,
    "variance": pl.Float64,
    "scaled_variance": pl.Float64,  # by max - min of the metric's variance column (C.1, the default)
    "scaled_variance_value_range": pl.Float64,  # by max - min of the metric's values (careval's earlier reading)
    "cv": pl.Float64,
}

# --- CareQA build: the close-ended set (the published HPAI-BSC/CareQA column order), the open-ended set
# and the translation audit.
CAREQA_CLOSE_SCHEMA = {
    "exam_id": pl.Int64,
    "question": pl.String,
    "op1": pl.String,
    "op2": pl.String,
    "op3": pl.String,
    "op4": pl.String,
    "cop": pl.Int64,
    "year": pl.Int64,
    "category": pl.String,
    "unique_id": pl.String,
}
CAREQA_OPEN_SCHEMA = {
    "exam_id": pl.Int64,
    "question": pl.String,
    "answer": pl.String,
    "year": pl.Int64,
    "category": pl.String,
    "unique_id": pl.String,
}
CAREQA_TRANSLATION_AUDIT_SCHEMA = {
    "unique_id": pl.String,
    "field": pl.String,
    "source": pl.String,
    "output": pl.String,
    "status": pl.String,
}

# careval.careqa.statistics (paper appendix A): Table 4 per category and in total (lengths in tokens), the questions
# per set, year and category (figures 5-6), the review's correct shares per kind and category (figure 7)
CAREQA_TABLE4_SCHEMA = {
    "category": pl.String,
    "questions": pl.Int64,
    "max_q_tokens": pl.Int64,
    "avg_q_tokens": pl.Float64,
    "max_a_tokens": pl.Int64,
    "avg_a_tokens": pl.Float64,
    "vocabulary": pl.Int64,
}
CAREQA_CATEGORIES_PER_YEAR_SCHEMA = {"set": pl.String, "year": pl.Int64, "category": pl.String, "questions": pl.Int64}
CAREQA_REVIEW_CORRECTNESS_SCHEMA = {
    "kind": pl.String,
    "category": pl.String,
    "items": pl.Int64,
    "at_least_one": pl.Float64,
    "at_least_two": pl.Float64,
    "all_reviewers": pl.Float64,
}
# careval.analysis.statistics.comparisons: one row per model set x unordered pair x benchmark x metric; diff = mean(a) - mean(b)
COMPARISON_SCHEMA = {
    "model_set": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "n": pl.Int64,
    "n_dropped": pl.Int64,
    "diff": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "effect_size": pl.Float64,
    "mde": pl.Float64,
    "p_value": pl.Float64,
    "p_holm": pl.Float64,
    "p_bh": pl.Float64,
    "test": pl.String,
    "resamples": pl.Int64,
}
# careval.analysis.studies.tables (config `studies:`): results/studies/<study>/sample_scores.parquet is the per-sample table's
# columns plus the variant; results/summary/studies.parquet one row per study x variant x model x benchmark x metric
# against the model's baseline (the run's own setting): the paired test of the comparisons, Holm within the study, and
# Kendall's tau between the models' ranking under the variant and under the baseline (the others at their own values)
STUDY_SAMPLE_SCHEMA = {**SUMMARY_SAMPLE_SCHEMA, "variant": pl.String}
STUDY_SCHEMA = {
    "study": pl.String,
    "variant": pl.String,
    "baseline": pl.String,
    "model": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "n": pl.Int64,
    "n_dropped": pl.Int64,
    "value": pl.Float64,
    # each arm's percentile interval over the paired bootstrap resamples of the samples both scored
    "value_low": pl.Float64,
    "value_high": pl.Float64,
    "baseline_value": pl.Float64,
    "baseline_low": pl.Float64,
    "baseline_high": pl.Float64,
    "diff": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "effect_size": pl.Float64,
    "p_value": pl.Float64,
    "p_holm": pl.Float64,
    "test": pl.String,
    "min_p": pl.Float64,  # the smallest p the test can reach over n samples (studies.tables.smallest_p)
    "kendall_tau": pl.Float64,
    "kendall_p": pl.Float64,
    "n_ranked": pl.Int64,
}
# careval.analysis.cost: per model x benchmark, the jobs that produced its results (comma-separated kinds) and their cost
COST_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "jobs": pl.String,
    "wall_seconds": pl.Float64,
    "gpu_seconds": pl.Float64,
    # the requests of its LLM jobs read from the request cache and computed; the tokens of the computed ones only
    "cached_requests": pl.Int64,
    "computed_requests": pl.Int64,
    "prompt_tokens": pl.Int64,
    "generated_tokens": pl.Int64,
    # what the results needed, read from the cache or computed (each cache entry keeps the cost of the run that computed
    # it): its tokens, the engine's seconds and GPU-seconds of those calls, and the requests read from entries written
    # before entries kept their cost (their seconds not known); null: no LLM job, or its counts predate these
    "needed_prompt_tokens": pl.Int64,
    "needed_generated_tokens": pl.Int64,
    "needed_seconds": pl.Float64,
    "needed_gpu_seconds": pl.Float64,
    "uncosted_requests": pl.Int64,
    # the requests whose context was longer than the model's window, left-truncated (careval.backends.cached)
    "cut_requests": pl.Int64,
    # what those tokens cost at the price of the served models that computed them (a model entry's `price`; null: none)
    "cost": pl.Float64,
}
# careval.analysis.cost: the request cache's size when the cost table was made (one row; null: no cache)
CACHE_SCHEMA = {"directory": pl.String, "entries": pl.Int64, "bytes": pl.Int64}

# careval.analysis.statistics.significance_groups: each ranking with its tied groups, and its adjacent ranks that differ
GROUP_SCHEMA = {
    "model_set": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "position": pl.Int64,  # 1 = best by the summary value
    "model": pl.String,
    "value": pl.Float64,
    "letters": pl.String,
}
ADJACENT_SCHEMA = {
    "model_set": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "models": pl.Int64,
    "adjacent_pairs": pl.Int64,
    "significant": pl.Int64,
}

# A judge jury's analyses (careval.analysis.jury.judge_agreement, judge_bias, jury_stability) and people's ratings
# (careval.analysis.jury.human_ratings); the columns' meanings are in those modules.
JUDGE_AGREEMENT_SCHEMA = {
    "benchmark": pl.String,
    "rubric": pl.String,
    "statistic": pl.String,
    "judges": pl.String,  # the judges the statistic is over, joined by " | "
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,  # units (answers) the statistic is over; for kendall_tau_ranking, models
}

JUDGE_BIAS_SCHEMA = {
    "benchmark": pl.String,
    "rubric": pl.String,
    "judge": pl.String,
    "check": pl.String,  # length_spearman | self_preference | modal_grade_share | share_grade_<g>
    "model": pl.String,  # self_preference: the judge's own (or same-family) model; else null
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p": pl.Float64,  # length_spearman's p-value; else null
    "n": pl.Int64,
    "flagged": pl.Boolean,  # length bias or one grade; null for self_preference and the shares
}

JURY_STABILITY_SCHEMA = {
    "benchmark": pl.String,
    "analysis": pl.String,  # resilience (rephrasing) | consistency (resampling)
    "rubric": pl.String,
    "kind": pl.String,  # grade | expected
    "rater": pl.String,  # "jury" or a judge's name
    "mean_scaled_variance": pl.Float64,
    "ratio_to_jury": pl.Float64,
    "n": pl.Int64,  # answers with a finite scaled variance
}

RATINGS_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "id": pl.String,
    "criterion": pl.String,
    "rating": pl.Float64,
    "rater": pl.String,
}

RATER_AGREEMENT_SCHEMA = {
    "benchmark": pl.String,
    "criterion": pl.String,
    "statistic": pl.String,
    "raters": pl.String,
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,
}

HUMAN_AGREEMENT_SCHEMA = {
    "benchmark": pl.String,
    "criterion": pl.String,
    "metric": pl.String,
    "statistic": pl.String,  # spearman | icc_2_1_standardised
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,
}
