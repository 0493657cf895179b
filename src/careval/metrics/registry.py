"""The metric registry: what careval knows about every metric family and every metric it writes.

A family is one registered object (:class:`MetricFamily`): its name and category, who computes it,
its metrics' facts, the config keys it reads and its scoring function. Scoring (careval.scoring),
the config schema's family list (careval.config) and the plan read :data:`FAMILIES`; adding a
family touches this module, its scorer and its section of the schema.

One place for each fact the analyses need: which family (one score file per model x benchmark)
writes a metric, the paper's category (section 2.2), whether higher is better, its range, how
per-sample values combine into a benchmark value, and whether it enters the self-consistency CV.
Rankings, correlation signs, CV exclusions, cluster names and figure notes read this module;
nothing guesses a direction from a metric's name elsewhere.

Families with a variable set of metrics (the judge's rubrics, F1-RadGraph's reward levels) are
matched by prefix, and the perplexity family's "given the question" variants by suffix, so a
name written by a scorer always resolves here or fails loudly (:class:`UnknownMetricError`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

INF = float("inf")
# Who computes a family (MetricFamily.job).
JOBS = ("score", "llm", "extra")


@dataclass(frozen=True)
class MetricSpec:
    """One metric. ``bounds`` is its range (``-inf``/``inf`` where open); ``average`` is how
    per-sample values make the benchmark value ("mean": weighted arithmetic mean; "geometric": the
    weighted geometric mean, which for perplexities is exactly lm-eval's corpus value);
    ``in_cv``: the coefficient of variation is meaningful (the values are positive on a ratio
    scale; the paper leaves BLEURT out "for it can take negative values")."""

    name: str
    family: str
    higher_is_better: bool
    bounds: tuple[float, float] = (0.0, 1.0)
    average: str = "mean"
    in_cv: bool = True
    label: str = ""
    # one of the eleven metrics of the paper (section 2.2; the judge's is judge_<main rubric>, paper_metrics())
    paper: bool = False
    # every per-sample value is 0 or 1 (a correct answer): paired comparisons use McNemar's exact test
    binary: bool = False

    @property
    def bounded(self) -> bool:
        return self.bounds[0] > -INF and self.bounds[1] < INF

    @property
    def category(self) -> str:
        return FAMILIES[self.family].category

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


@dataclass(frozen=True)
class MetricFamily:
    """A family: the metrics one scorer writes into one file per model x benchmark, and all careval knows of it.

    ``job`` says who computes it: "score" (the scoring job of the benchmark's task, from the
    generations and log-likelihoods), "llm" (a job of its own that loads an LLM: the judge, or the
    evaluated model for Relaxed Perplexity) or "extra" (a job of its own, only for benchmarks whose
    entry lists it in ``extra_metrics``: F1-RadGraph on MIMIC-III). ``repeats``: recomputed on every
    rephrasing and sampled answer of the resilience and self-consistency analyses.

    ``metrics``: the specs of the metrics it always writes (a family whose metric names depend on the
    config, the judge's or F1-RadGraph's, is resolved by :func:`metric_spec`'s patterns instead).
    The keys of its config section ``metrics.<family>`` (the schema holds their defaults, and
    tests/metrics/test_registry.py holds the three tuples to exactly that section's keys):
    ``options`` change a value; ``execution_options`` change only speed or placement (a batch size
    only pads differently, a device computes in another order: a value differs by float noise at
    most); ``plan_options`` are read by the plan (which benchmarks, which judge), never by a scorer.

    ``scorer`` is the family's scoring function as "module:function", imported when scoring runs (the
    registry is layer 0, the scorers live above it); every scorer has the signature of :meth:`score`.
    None for the "llm" families: a job of their own computes them (careval.jobs).

    ``runner`` ("module:function") is an "llm" family's computation where its job is the generic rule
    `llm_family` (workflow/rules/llm_family.smk): the evaluated model's backend computes it on a benchmark an entry
    lists it for (``extra_metrics``), with the signature of :meth:`run`. A new LLM-run family is its entry and its
    runner (careval.plugins: both in a module of the user's own); the judge and Relaxed Perplexity have rules of their
    own (runner None).
    """

    name: str
    category: str
    job: str = "score"
    repeats: bool = False
    metrics: tuple[MetricSpec, ...] = ()
    options: tuple[str, ...] = ()
    execution_options: tuple[str, ...] = ()
    plan_options: tuple[str, ...] = ()
    scorer: str | None = None
    runner: str | None = None
    # its values come from the evaluated model's log-probabilities (its inference's log-likelihoods, or its own
    # job's): a backend without them is refused at plan time (careval.plan, the backend's declared capabilities)
    logprobs: bool = False
    # the libraries its scorer imports slowly (and starts no thread importing): a local run's warm worker imports
    # them ahead where the run scores this family (careval.warm.preload.warm_modules)
    imports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.job not in JOBS:
            raise ValueError(f"family '{self.name}': job '{self.job}' is not one of {JOBS}")
        if (self.scorer is None) != (self.job == "llm"):
            raise ValueError(f"family '{self.name}': a scorer is needed exactly when job is not 'llm'")
        if self.runner is not None and self.job != "llm":
            raise ValueError(f"family '{self.name}': a runner computes an 'llm' family (a scorer the others)")
        strays = [spec.name for spec in self.metrics if spec.family != self.name]
        if strays:
            raise ValueError(f"family '{self.name}' lists metrics of another family: {strays}")

    @property
    def config_keys(self) -> tuple[str, ...]:
        """Every key of ``metrics.<family>``: options, execution options and plan options."""
        return self.options + self.execution_options + self.plan_options

    def value_options(self, options: dict) -> dict:
        """The part of a family's option dict that changes a value (its ``options`` keys that are set)."""
        return {key: options[key] for key in self.options if key in options}

    def scoring_function(self) -> Callable[..., Any]:
        """The scorer, imported now; an "llm" family has none (its own job computes it)."""
        if self.scorer is None:
            raise ValueError(
                f"metric family '{self.name}' is computed by a job of its own (job '{self.job}'), not by a scorer"
            )
        module, _, function = self.scorer.partition(":")
        return getattr(importlib.import_module(module), function)

    def run(self, samples: Any, backend: Any, entry: Any, options: dict) -> Any:
        """Compute an "llm" family with a runner: score rows (careval.schemas.SCORE_SCHEMA) of the benchmark's
        ``samples`` by the evaluated model's ``backend`` (careval.backends.Backend), ``entry`` the benchmark
        (careval.datasets.benchmark.Benchmark: its prompt, instruction, task), ``options`` the family's value options."""
        if self.runner is None:
            raise ValueError(f"metric family '{self.name}' has no runner (its rule computes it, job '{self.job}')")
        module, _, function = self.runner.partition(":")
        return getattr(importlib.import_module(module), function)(samples, backend, entry, options)

    def score(self, samples: Any, generations: Any, logliks: Any, options: dict, min_chars: int = 1) -> Any:
        """Score rows (careval.schemas.SCORE_SCHEMA) of one model x benchmark: ``samples``, its
        ``generations`` and ``logliks`` (None where the task has none), ``options`` this family's
        section with the schema's defaults filled in, ``min_chars`` the benchmark's shortest scored text."""
        return self.scoring_function()(samples, generations, logliks, options, min_chars)


_PERPLEXITY: dict[str, Any] = dict(higher_is_better=False, bounds=(1.0, INF), average="geometric")
_SCORING = "careval.scoring"

FAMILIES: dict[str, MetricFamily] = {
    family.name: family
    for family in (
        MetricFamily(
            "accuracy",
            "accuracy",
            metrics=(
                MetricSpec("acc", "accuracy", True, label="accuracy", binary=True),
                MetricSpec("acc_norm", "accuracy", True, label="accuracy (length-normalised)", binary=True),
            ),
            scorer=f"{_SCORING}:score_accuracy",
            logprobs=True,
        ),
        MetricFamily(
            "classification",
            "classification",
            # acc, with accuracy's spec, and macro-F1 (tasks/classification.py)
            metrics=(MetricSpec("macro_f1", "classification", True, label="macro-F1"),),
            scorer=f"{_SCORING}:score_classification_family",
            logprobs=True,  # in mode loglik (a generating benchmark computes none: careval.plan)
        ),
        MetricFamily(
            "relation_extraction",
            "relation extraction",
            metrics=(
                MetricSpec("precision", "relation_extraction", True),
                MetricSpec("recall", "relation_extraction", True),
                MetricSpec("f1", "relation_extraction", True),
            ),
            scorer=f"{_SCORING}:score_relation_extraction",
        ),
        MetricFamily(
            "rouge",
            "n-gram",
            repeats=True,
            metrics=(
                MetricSpec("rouge1", "rouge", True, label="ROUGE-1", paper=True),
                MetricSpec("rouge2", "rouge", True, label="ROUGE-2", paper=True),
                MetricSpec("rougeL", "rouge", True, label="ROUGE-L", paper=True),
            ),
            scorer=f"{_SCORING}:score_rouge",
            imports=("rouge_score.rouge_scorer",),  # nltk
        ),
        MetricFamily(
            "bleu",
            "n-gram",
            repeats=True,
            metrics=(
                # the authors' BLEU: Hugging Face evaluate's (tensorflow/nmt, unsmoothed), per sample
                MetricSpec("bleu", "bleu", True, label="BLEU", paper=True),
                MetricSpec("sacrebleu", "bleu", True, bounds=(0.0, 100.0), label="sacreBLEU"),
                MetricSpec("sacrebleu_corpus", "bleu", True, bounds=(0.0, 100.0), label="corpus sacreBLEU"),
            ),
            scorer=f"{_SCORING}:score_bleu",
            imports=("sacrebleu",),
        ),
        MetricFamily(
            "bertscore",
            "semantic",
            repeats=True,
            metrics=(
                MetricSpec("bertscore_precision", "bertscore", True, bounds=(-1.0, 1.0), label="BERTScore P"),
                MetricSpec("bertscore_recall", "bertscore", True, bounds=(-1.0, 1.0), label="BERTScore R"),
                MetricSpec("bertscore_f1", "bertscore", True, bounds=(-1.0, 1.0), label="BERTScore F1", paper=True),
            ),
            options=("model", "lang", "num_layers"),
            execution_options=("batch_size",),
            scorer=f"{_SCORING}:score_bertscore",
            imports=("bert_score", "bert_score.utils", "careval.metrics.semantic"),  # pandas, pyarrow
        ),
        MetricFamily(
            "bleurt",
            "semantic",
            repeats=True,
            # BLEURT is a regression score, unbounded and often negative
            metrics=(
                MetricSpec("bleurt", "bleurt", True, bounds=(-INF, INF), in_cv=False, label="BLEURT", paper=True),
            ),
            options=("model", "max_length"),
            execution_options=("batch_size", "device"),
            scorer=f"{_SCORING}:score_bleurt",
        ),
        MetricFamily(
            "moverscore",
            "semantic",
            repeats=True,
            metrics=(MetricSpec("moverscore", "moverscore", True, label="MoverScore", paper=True),),
            options=("model",),
            execution_options=("batch_size",),
            scorer=f"{_SCORING}:score_moverscore",
            imports=("ot", "careval.metrics.moverscore"),  # sklearn
        ),
        MetricFamily(
            "perplexity",
            "perplexity",
            metrics=(
                MetricSpec("word_perplexity", "perplexity", label="word perplexity", paper=True, **_PERPLEXITY),
                MetricSpec("byte_perplexity", "perplexity", label="byte perplexity", paper=True, **_PERPLEXITY),
                # bits per byte is a log-scale quantity: its byte-weighted arithmetic mean is exactly lm-eval's corpus value
                MetricSpec("bits_per_byte", "perplexity", False, bounds=(0.0, INF), label="bits per byte", paper=True),
            ),
            scorer=f"{_SCORING}:score_perplexity_family",
            logprobs=True,
        ),
        # judge_<rubric> and judge_<rubric>_expected, one pair per rubric (metric_spec's patterns).
        # No scorer: the judge job (careval.jobs) loads the judge LLM and grades. Its `model` (which LLM)
        # and `benchmarks` are read by the plan (careval.plan), not by a scorer.
        MetricFamily(
            "judge",
            "llm-judge",
            job="llm",
            repeats=True,
            options=("rubrics", "retries", "max_new_tokens", "temperature", "top_p", "seed", "limit", "repeats_limit"),
            plan_options=(
                "model",
                "benchmarks",
                "models",
                "aggregate",
                "same_family",
                "length_bias_flag",
                "one_grade_flag",
            ),
        ),
        # No scorer: the relaxed perplexity job (careval.jobs) samples continuations from the evaluated
        # model. Its `benchmarks` are read by the plan (careval.plan), not by a scorer.
        MetricFamily(
            "relaxed_perplexity",
            "relaxed perplexity",
            job="llm",
            logprobs=True,
            metrics=(
                MetricSpec("relaxed_perplexity", "relaxed_perplexity", label="Relaxed Perplexity", **_PERPLEXITY),
                MetricSpec(
                    "relaxed_cross_entropy",
                    "relaxed_perplexity",
                    False,
                    bounds=(0.0, INF),
                    label="Relaxed cross-entropy",
                ),
                # OLAPH's second target set (appendix D, table 6): the Nice_to_have statements
                MetricSpec(
                    "relaxed_perplexity_nice_to_have",
                    "relaxed_perplexity",
                    label="Relaxed Perplexity (Nice_to_have)",
                    **_PERPLEXITY,
                ),
                MetricSpec(
                    "relaxed_cross_entropy_nice_to_have",
                    "relaxed_perplexity",
                    False,
                    bounds=(0.0, INF),
                    label="Relaxed cross-entropy (Nice_to_have)",
                ),
            ),
            options=("l", "s", "stride", "top_p", "max_tokens", "skewed", "seed", "limit", "reference_targets"),
            plan_options=("benchmarks",),
        ),
        # f1radgraph_<level>, one per reward level (metric_spec's pattern). The cache folders only say
        # where the files of the model `model_type` names are read from: execution options.
        MetricFamily(
            "radgraph",
            "radgraph",
            job="extra",
            options=("reward_level", "model_type"),
            execution_options=("model_cache_dir", "tokenizer_cache_dir", "batch_size", "device"),
            scorer=f"{_SCORING}:score_radgraph",
        ),
        # An lm-eval task's own metrics per document (its filters and process_results), named as lm-eval names them
        # (LM_EVAL_METRICS, lm_eval_metric_name): every benchmark `lm_eval_task:` is scored with it.
        MetricFamily("lm_eval", "lm-eval", scorer="careval.lm_eval_scoring:score_lm_eval"),
    )
}


# lm-eval 0.4.13's built-in metrics (lm_eval.api.metrics: their names, higher_is_better, aggregation), which the
# lm_eval family writes as lm-eval computes them per document (careval.lm_eval_scoring). Those careval defines the
# same way keep careval's spec (acc, acc_norm, the rolling perplexities: lm_eval_metric_name), so an lm-eval MCQA
# task's acc enters the MCQA average; a per-document value that is no number (f1's (gold, pred)) has only the
# corpus value lm-eval's aggregation makes of them.
LM_EVAL_METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec("acc", "lm_eval", True, label="accuracy", binary=True),
        MetricSpec("acc_norm", "lm_eval", True, label="accuracy (length-normalised)", binary=True),
        MetricSpec("acc_bytes", "lm_eval", True, label="accuracy (byte-normalised)", binary=True),
        MetricSpec("acc_mutual_info", "lm_eval", True, label="accuracy (mutual information)", binary=True),
        MetricSpec("acc_all", "lm_eval", True, label="accuracy (all of a question's answers)"),
        MetricSpec("exact_match", "lm_eval", True, label="exact match"),
        # lm-eval's perplexity of a loglikelihood task: exp(-mean log-likelihood), the geometric mean of exp(-ll)
        MetricSpec("perplexity", "lm_eval", False, bounds=(1.0, INF), average="geometric", label="perplexity"),
        MetricSpec("word_perplexity", "lm_eval", label="word perplexity", **_PERPLEXITY),
        MetricSpec("byte_perplexity", "lm_eval", label="byte perplexity", **_PERPLEXITY),
        MetricSpec("bits_per_byte", "lm_eval", False, bounds=(0.0, INF), label="bits per byte"),
        MetricSpec("likelihood", "lm_eval", True, bounds=(-INF, 0.0), label="gold log-likelihood"),
        MetricSpec("brier_score", "lm_eval", False, bounds=(0.0, 2.0), label="Brier score"),
        MetricSpec("mcc", "lm_eval", True, bounds=(-1.0, 1.0), label="Matthews correlation"),
        MetricSpec("f1", "lm_eval", True, label="F1"),
        MetricSpec("bleu", "lm_eval", True, bounds=(0.0, 100.0), label="BLEU (sacreBLEU, lm-eval)"),
        MetricSpec("chrf", "lm_eval", True, bounds=(0.0, 100.0), label="chrF"),
        MetricSpec("chrf++", "lm_eval", True, bounds=(0.0, 100.0), label="chrF++"),
        MetricSpec("ter", "lm_eval", False, bounds=(0.0, INF), label="TER"),
    )
}
# lm-eval's metrics that careval's own families define alike: written under their plain names
LM_EVAL_AS_CAREVAL = ("acc", "acc_norm", "word_perplexity", "byte_perplexity", "bits_per_byte")
# lm-eval's results key: "<metric>,<filter>"
LM_EVAL_FILTER_SEPARATOR = ","

# The families each task is scored with; the scoring rules write one file per family.
TASK_FAMILIES: dict[str, tuple[str, ...]] = {
    "mcqa": ("accuracy",),
    # the label among the class names: accuracy and macro-F1 (tasks/classification.py)
    "classification": ("classification",),
    # (entity, entity, relation type) triples parsed from a generation (tasks/extraction.py)
    "extraction": ("relation_extraction",),
    # the paper's prescription task is 4-option multiple choice scored like MCQA (tasks/prescription.py),
    # kept apart from MCQA so it never enters the weighted MCQA average
    "prescription": ("accuracy",),
    "open": ("rouge", "bleu", "bertscore", "bleurt", "moverscore", "perplexity", "judge", "relaxed_perplexity"),
}

# Name patterns of families whose metric names depend on the config.
JUDGE_PREFIX = "judge_"
# judge_<rubric>_expected: the probability-weighted mean of the judge's five score probabilities
JUDGE_EXPECTED_SUFFIX = "_expected"
# judge_<rubric>@<judge>: one judge's grade in a jury (careval.metrics.jury); judge_<rubric> is then the jury's
JUDGE_SEPARATOR = "@"
RADGRAPH_PREFIX = "f1radgraph_"
GIVEN_QUESTION = "_given_question"

# Every metric with a fixed name, in the families' order.
METRICS: dict[str, MetricSpec] = {spec.name: spec for family in FAMILIES.values() for spec in family.metrics}


def lm_eval_metric_name(metric: str, filter_key: str) -> str:
    """The name an lm-eval metric is written under: lm-eval's own under its "none" filter where careval's families
    write no other metric by it (or define it alike: LM_EVAL_AS_CAREVAL), else lm-eval's results key
    "<metric>,<filter>" (lm-eval's BLEU beside careval's, a generation's strict-match and flexible-extract)."""
    if filter_key == "none" and (metric not in METRICS or metric in LM_EVAL_AS_CAREVAL):
        return metric
    return f"{metric}{LM_EVAL_FILTER_SEPARATOR}{filter_key}"


# The statuses of a per-sample row whose value counts: "ok", and a judge grade read from the
# judge's score distribution because its verdict did not parse (judge.py). Every other status is
# a failure with a NaN value, counted apart.
VALUED_STATUSES = ("ok", "from_distribution")
# the suffix of a metric's per-sample variance over rephrasings, in a study of the resilience analysis
REPHRASE_VARIANCE = "_rephrase_variance"
# The statuses of a judge_<rubric> row the judge was asked for: parsed, read from the distribution,
# or neither (a judge without log-probabilities). Other statuses: the answer was not sent to the judge.
JUDGE_VERDICT_STATUSES = ("ok", "from_distribution", "parse_error")


class UnknownMetricError(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def metric_spec(name: str) -> MetricSpec:
    """The spec of a metric written by any careval scorer; an unknown name is an error, never a guess."""
    if name in METRICS:
        return METRICS[name]
    if name.endswith(GIVEN_QUESTION) and name[: -len(GIVEN_QUESTION)] in METRICS:
        base = METRICS[name[: -len(GIVEN_QUESTION)]]
        return MetricSpec(
            name,
            base.family,
            base.higher_is_better,
            base.bounds,
            base.average,
            base.in_cv,
            f"{base.label} given the question",
        )
    if name.endswith(REPHRASE_VARIANCE):
        # a study of the resilience analysis (careval.analysis.studies.tables): a metric's variance over a sample's rephrasings
        spec = metric_spec(name[: -len(REPHRASE_VARIANCE)])
        return MetricSpec(
            name, spec.family, False, (0.0, INF), in_cv=False, label=f"{spec.label}: variance over rephrasings"
        )
    if name.startswith(JUDGE_PREFIX) and JUDGE_SEPARATOR in name:
        # one judge of a jury (careval.metrics.jury): judge_<rubric>[_expected]@<judge>, its jury metric's facts
        base, _, judge = name.partition(JUDGE_SEPARATOR)
        spec = metric_spec(base)
        return MetricSpec(
            name, spec.family, spec.higher_is_better, spec.bounds, spec.average, spec.in_cv, f"{spec.label} [{judge}]"
        )
    if (
        name.startswith(JUDGE_PREFIX)
        and name.endswith(JUDGE_EXPECTED_SUFFIX)
        and len(name) > len(JUDGE_PREFIX + JUDGE_EXPECTED_SUFFIX)
    ):
        # the judge's expected 1-5 grade per rubric (judge_distribution.py)
        rubric = name[len(JUDGE_PREFIX) : -len(JUDGE_EXPECTED_SUFFIX)]
        return MetricSpec(name, "judge", True, bounds=(1.0, 5.0), label=f"judge: {rubric} (expected)")
    if name.startswith(JUDGE_PREFIX):
        # a 1-5 Prometheus grade per rubric
        return MetricSpec(name, "judge", True, bounds=(1.0, 5.0), label=f"judge: {name[len(JUDGE_PREFIX) :]}")
    if name.startswith(RADGRAPH_PREFIX):
        return MetricSpec(name, "radgraph", True, label=f"F1-RadGraph ({name[len(RADGRAPH_PREFIX) :]})")
    metric, _, filter_key = name.partition(LM_EVAL_FILTER_SEPARATOR)
    if metric in LM_EVAL_METRICS:  # an lm-eval task's metric (lm_eval_metric_name)
        base = LM_EVAL_METRICS[metric]
        label = f"{base.label} [{filter_key}]" if filter_key else base.label
        return MetricSpec(
            name, "lm_eval", base.higher_is_better, base.bounds, base.average, base.in_cv, label, binary=base.binary
        )
    raise UnknownMetricError(f"metric '{name}' is not in careval's metric registry (careval/metrics/registry.py)")


def higher_is_better(name: str) -> bool:
    return metric_spec(name).higher_is_better


def metric_category(name: str) -> str:
    """The paper's category of a metric (section 2.2: n-gram, semantic, perplexity, llm-judge, ...)."""
    return metric_spec(name).category


def family_of(name: str) -> str:
    return metric_spec(name).family


def paper_metrics(main_rubric: str | None) -> tuple[str, ...]:
    """The paper's eleven open-ended metrics (section 2.2) in its order: n-gram, semantic, perplexity, then
    Prometheus, which is the judge's grade under the main rubric (judge_<main rubric>; a jury's column keeps it).
    Without a rubric (no judge configured) the ten others."""
    fixed = tuple(name for name, spec in METRICS.items() if spec.paper)
    return fixed if main_rubric is None else (*fixed, JUDGE_PREFIX + main_rubric)
