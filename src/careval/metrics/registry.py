"""The metric registry: what careval knows about every metric family and every metric it writes.

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

from dataclasses import dataclass

INF = float("inf")


@dataclass(frozen=True)
class MetricFamily:
    """A family: the metrics one scorer writes into one file per model x benchmark.

    ``job`` says who computes it: "score" (the scoring job of the benchmark's task, from the
    generations and log-likelihoods), "llm" (a job of its own that loads an LLM: the judge, or the
    evaluated model for Relaxed Perplexity) or "extra" (a job of its own, only for benchmarks whose
    entry lists it in ``extra_metrics``: F1-RadGraph on MIMIC-III). ``repeats``: recomputed on every
    rephrasing and sampled answer of the resilience and self-consistency analyses.
    """

    name: str
    category: str
    job: str = "score"
    repeats: bool = False


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

    @property
    def bounded(self) -> bool:
        return self.bounds[0] > -INF and self.bounds[1] < INF

    @property
    def category(self) -> str:
        return FAMILIES[self.family].category

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


FAMILIES: dict[str, MetricFamily] = {
    family.name: family
    for family in (
        MetricFamily("accuracy", "accuracy"),
        MetricFamily("classification", "classification"),
        MetricFamily("relation_extraction", "relation extraction"),
        MetricFamily("rouge", "n-gram", repeats=True),
        MetricFamily("bleu", "n-gram", repeats=True),
        MetricFamily("bertscore", "semantic", repeats=True),
        MetricFamily("bleurt", "semantic", repeats=True),
        MetricFamily("moverscore", "semantic", repeats=True),
        MetricFamily("perplexity", "perplexity"),
        MetricFamily("judge", "llm-judge", job="llm", repeats=True),
        MetricFamily("relaxed_perplexity", "relaxed perplexity", job="llm"),
        MetricFamily("radgraph", "radgraph", job="extra"),
    )
}

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

_PERPLEXITY = dict(higher_is_better=False, bounds=(1.0, INF), average="geometric")
_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("acc", "accuracy", True, label="accuracy"),
    MetricSpec("acc_norm", "accuracy", True, label="accuracy (length-normalised)"),
    MetricSpec("macro_f1", "classification", True, label="macro-F1"),
    MetricSpec("precision", "relation_extraction", True),
    MetricSpec("recall", "relation_extraction", True),
    MetricSpec("f1", "relation_extraction", True),
    MetricSpec("rouge1", "rouge", True, label="ROUGE-1"),
    MetricSpec("rouge2", "rouge", True, label="ROUGE-2"),
    MetricSpec("rougeL", "rouge", True, label="ROUGE-L"),
    # the authors' BLEU: Hugging Face evaluate's (tensorflow/nmt, unsmoothed), per sample
    MetricSpec("bleu", "bleu", True, label="BLEU"),
    MetricSpec("sacrebleu", "bleu", True, bounds=(0.0, 100.0), label="sacreBLEU"),
    MetricSpec("sacrebleu_corpus", "bleu", True, bounds=(0.0, 100.0), label="corpus sacreBLEU"),
    MetricSpec("bertscore_precision", "bertscore", True, bounds=(-1.0, 1.0), label="BERTScore P"),
    MetricSpec("bertscore_recall", "bertscore", True, bounds=(-1.0, 1.0), label="BERTScore R"),
    MetricSpec("bertscore_f1", "bertscore", True, bounds=(-1.0, 1.0), label="BERTScore F1"),
    # BLEURT is a regression score, unbounded and often negative
    MetricSpec("bleurt", "bleurt", True, bounds=(-INF, INF), in_cv=False, label="BLEURT"),
    MetricSpec("moverscore", "moverscore", True, label="MoverScore"),
    MetricSpec("word_perplexity", "perplexity", label="word perplexity", **_PERPLEXITY),
    MetricSpec("byte_perplexity", "perplexity", label="byte perplexity", **_PERPLEXITY),
    # bits per byte is a log-scale quantity: its byte-weighted arithmetic mean is exactly lm-eval's corpus value
    MetricSpec("bits_per_byte", "perplexity", False, bounds=(0.0, INF), label="bits per byte"),
    MetricSpec("relaxed_perplexity", "relaxed_perplexity", label="Relaxed Perplexity", **_PERPLEXITY),
    MetricSpec("relaxed_cross_entropy", "relaxed_perplexity", False, bounds=(0.0, INF), label="Relaxed cross-entropy"),
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
)
METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in _METRICS}

# Name patterns of families whose metric names depend on the config.
JUDGE_PREFIX = "judge_"
# judge_<rubric>_expected: the probability-weighted mean of the judge's five score probabilities
JUDGE_EXPECTED_SUFFIX = "_expected"
RADGRAPH_PREFIX = "f1radgraph_"
GIVEN_QUESTION = "_given_question"


# The statuses of a per-sample row whose value counts: "ok", and a judge grade read from the
# judge's score distribution because its verdict did not parse (judge.py). Every other status is
# a failure with a NaN value, counted apart.
VALUED_STATUSES = ("ok", "from_distribution")
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
    raise UnknownMetricError(f"metric '{name}' is not in careval's metric registry (careval/metrics/registry.py)")


def higher_is_better(name: str) -> bool:
    return metric_spec(name).higher_is_better


def metric_category(name: str) -> str:
    """The paper's category of a metric (section 2.2: n-gram, semantic, perplexity, llm-judge, ...)."""
    return metric_spec(name).category


def family_of(name: str) -> str:
    return metric_spec(name).family
