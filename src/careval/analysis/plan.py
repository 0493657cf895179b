"""Which analyses and figures a config asks for (resilience, self-consistency, Elo, model sets), checked once at start-up.

The plan's figure list (:attr:`AnalysisPlan.figures`) is the one place a figure's name, caption and report
category live: the correlations rule declares it, and careval.analysis.figures.report draws exactly it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from careval.analysis.studies.tables import StudyPage
from careval.analysis.tables.paper_tables import PaperTablesJob, TableSpec
from careval.canonical import JobSpec, job_spec
from careval.metrics.registry import paper_metrics
from careval.schema import with_schema_defaults
from careval.specs import Bootstrap

# The reserved model-set name: every evaluated model (the schema's default set of every figure family).
ALL = "all"
# The figure families drawn once per model set (analysis.figure_sets); each is also its correlation analysis' name.
SET_FAMILIES = (
    "mcqa_vs_open",
    "metric_x_metric",
    "benchmark_x_benchmark",
    "mcqa_vs_elo",
    "rankings",
    "relaxed_perplexity_vs_all",
)
# figure kind -> (its caption, a file under workflow/report/; its Snakemake report category)
FIGURE_KINDS = {
    "scores": ("scores.rst", "1. Scores"),
    "mcqa_vs_open": ("mcqa_vs_open.rst", "2. Correlations"),
    "metric_x_metric": ("metric_x_metric.rst", "2. Correlations"),
    "benchmark_x_benchmark": ("benchmark_x_benchmark.rst", "2. Correlations"),
    "mcqa_vs_elo": ("mcqa_vs_elo.rst", "2. Correlations"),
    "rankings": ("rankings.rst", "3. Rankings"),
    "relaxed_perplexity_vs_all": ("relaxed_perplexity_vs_all.rst", "2. Correlations"),
    "resilience": ("resilience.rst", "4. Resilience to rephrasing"),
    "consistency": ("consistency.rst", "5. Self-consistency"),
    "consistency_cv": ("consistency_cv.rst", "5. Self-consistency"),
    # appendix A: Table 4, figures 5-6 (closed, open), figure 7 (careval.careqa.statistics, analysis.careqa_figures)
    "careqa_table4": ("careqa_table4.rst", "10. CareQA"),
    "careqa_categories": ("careqa_categories.rst", "10. CareQA"),
    "careqa_review": ("careqa_review.rst", "10. CareQA"),
    "paper_table": ("paper_table.rst", "11. Appendix E tables"),
    "comparisons": ("comparisons.rst", "8. Paired comparisons"),
    "comparison_groups": ("comparison_groups.rst", "8. Paired comparisons"),
    "adjacent_pairs": ("adjacent_pairs.rst", "8. Paired comparisons"),
    "cost": ("cost.rst", "9. Cost"),
    # a jury of judges (careval.metrics.jury, careval.analysis.figures.jury)
    "jury": ("jury.rst", "6. Judge jury"),
    "judge_agreement": ("judge_agreement.rst", "6. Judge jury"),
    "judge_bias": ("judge_bias.rst", "6. Judge jury"),
    "jury_stability": ("jury_stability.rst", "6. Judge jury"),
    "human_agreement": ("human_agreement.rst", "7. Agreement with people"),
    # config `studies:` (careval.plan.studies, careval.analysis.figures.studies): a page per study, and paper Table 6
    "study": ("study.rst", "12. Studies"),
    "table6": ("table6.rst", "12. Studies"),
    # what this config does not make and why (a paper table whose metrics are skipped), and settings it cannot apply
    "run_notes": ("run_notes.rst", "0. About this run"),
}


class AnalysisConfigError(ValueError):
    """An analysis setting that names something the config does not have; one line, naming the key."""


@job_spec
class FigureSpec(JobSpec):
    """One figure of the report: results/figures/<name>.png and one PDF page, drawn by its `kind`'s function
    (careval.analysis.figures.report.DRAW) over `model_set` / `benchmark` / `method` where the kind has them."""

    name: str
    kind: str
    caption: str  # the caption's file under workflow/report/
    category: str  # the Snakemake report's category
    model_set: str | None = None
    benchmark: str | None = None
    method: str | None = None
    study: str | None = None


def figure(
    kind: str,
    model_set: str | None = None,
    benchmark: str | None = None,
    method: str | None = None,
    study: str | None = None,
):
    """The figure of `kind` over these: named <kind>[_<model_set>][_<benchmark>][_<method>][_<study>]."""
    caption, category = FIGURE_KINDS[kind]
    name = "_".join(part for part in (kind, model_set, benchmark, method, study) if part is not None)
    return FigureSpec(name, kind, caption, category, model_set, benchmark, method, study)


@job_spec
class ReportJob(JobSpec):
    """Everything the correlations job (careval.jobs.analysis_report) reads of the config: the figures it draws
    and the settings of the tables they show; nothing else, so no other setting replans it.

    model_sets: each set a figure uses -> its models; mcqa_average: the members of mcqa_weighted_average
    (None: every mcqa benchmark); bootstrap: None without intervals; cluster_min_correlation: None where
    `clusters` cuts instead; resilience_k / consistency_r: in the titles, None where no such figure is drawn.
    """

    figures: tuple[FigureSpec, ...]
    methods: tuple[str, ...]
    model_sets: dict[str, tuple[str, ...]]
    mcqa_average: tuple[str, ...] | None
    relaxed_perplexity_anchor: str | None
    bootstrap: Bootstrap | None
    cluster_min_correlation: float | None
    clusters: int | None
    resilience_k: int | None
    consistency_r: int | None
    # analysis.metric_view paper: the open-ended metrics the correlation figures and clusters use (the paper's
    # eleven, careval.metrics.registry.paper_metrics); None: every metric (view `all`)
    view_metrics: tuple[str, ...] | None = None
    # analysis.resilience.scaling: the column figures 13-15 draw (careval.analysis.statistics.spread)
    resilience_scaling: str = "variance_range"
    # the names of the paper tables (careval.analysis.tables.paper_tables) drawn as pages, from results/tables/<name>.csv
    paper_tables: tuple[str, ...] = ()
    # the comparison pages: their significance level and adjustment (analysis.comparisons.alpha / adjust); the cost
    # page: its quality's benchmark and metric and the cost axis (analysis.cost)
    comparison_alpha: float | None = None
    comparison_adjust: str | None = None
    cost: dict[str, str] | None = None
    # the study pages (config `studies:`): what each page says of its study
    studies: tuple[StudyPage, ...] = ()
    # the paper task (Table 1) of each of the run's benchmarks that has one: figure 1's task rows
    paper_tasks: dict[str, str] = field(default_factory=dict)
    # the run's benchmarks outside the paper's Table 1 (careval's additions): marked in the paper's figures
    additions: tuple[str, ...] = ()
    # figure 7: careqa.review.filled_sheets, named on its page while it holds no filled sheet; None: not drawn
    review_sheets: str | None = None
    # the run notes page (AnalysisPlan.notes): one line each
    notes: tuple[str, ...] = ()

    def of_kind(self, kind: str) -> list[FigureSpec]:
        return [f for f in self.figures if f.kind == kind]

    def sets(self, kind: str) -> tuple[str, ...]:
        """The model sets the figures of `kind` are drawn over, in figure order."""
        return tuple(dict.fromkeys(f.model_set for f in self.of_kind(kind)))


@job_spec
class FigureIndexJob(JobSpec):
    """figure_index: the report's figures as a table. The correlations job takes it as an input, so a new
    figure remakes the report: Snakemake compares the params of a job only when every output of it has its
    provenance, and a new figure's file has none (nor does any job ask for it but the report itself)."""

    figures: tuple[FigureSpec, ...]


@dataclass(frozen=True)
class AnalysisPlan:
    """The benchmarks each analysis runs on and the figures that follow; the rules declare exactly these outputs.

    model_sets: every set a figure uses -> its models (`all` resolved to the evaluated models);
    figure_sets: figure family -> the sets it is drawn for, in config order. The keyword-only fields are
    the report's own settings, read from the filled config (see ReportJob).
    """

    open_benchmarks: list[str]
    methods: list[str]
    resilience_benchmarks: list[str]
    consistency_benchmarks: list[str]
    elo: bool
    model_sets: dict[str, tuple[str, ...]]
    figure_sets: dict[str, tuple[str, ...]]
    # figure 17: the benchmark whose Relaxed Perplexity is correlated with everything else (None: not drawn)
    relaxed_perplexity_anchor: str | None = None
    # the run's members of mcqa_weighted_average (analysis.mcqa_average), in config order; None: every mcqa benchmark
    mcqa_average: list[str] | None = None
    bootstrap: Bootstrap | None = field(kw_only=True)  # None: analysis.bootstrap.resamples is 0
    cluster_min_correlation: float = field(kw_only=True)
    clusters: int | None = field(kw_only=True)
    resilience_k: int = field(kw_only=True)
    consistency_r: int = field(kw_only=True)
    # appendix A's pages drawn (careqa.statistics.tokenizer set): "table4", "closed", "open", "review" (filled sheets)
    careqa_pages: tuple[str, ...] = field(default=(), kw_only=True)
    metric_view: str = field(default="paper", kw_only=True)
    rubrics: tuple[str, ...] = field(default=(), kw_only=True)  # the judge's, the main (Prometheus) one first
    resilience_scaling: str = field(default="variance_range", kw_only=True)
    # the Appendix E tables this run fills (careval.analysis.tables.paper_tables.planned_tables; set by careval.plan)
    paper_tables: tuple[TableSpec, ...] = field(default=(), kw_only=True)
    # every benchmark of the run (the comparison pages); analysis.comparisons and analysis.cost as filled
    benchmarks: list[str] = field(kw_only=True, default_factory=list)
    comparisons: dict = field(kw_only=True, default_factory=dict)
    cost: dict = field(kw_only=True, default_factory=dict)
    # the benchmarks a jury grades (metrics.judge.models; set by careval.plan), and whether people's ratings are given
    jury_benchmarks: tuple[str, ...] = field(default=(), kw_only=True)
    human_ratings: bool = field(default=False, kw_only=True)
    # the studies (set by careval.plan once they are planned) and whether one writes paper Table 6
    studies: tuple[StudyPage, ...] = field(default=(), kw_only=True)
    table6: bool = field(default=False, kw_only=True)
    # the paper task of each run benchmark that has one, and the run's benchmarks outside the paper's Table 1 (the
    # catalogue's Benchmark.paper_task and .addition; set by careval.plan)
    paper_tasks: dict[str, str] = field(kw_only=True, default_factory=dict)
    additions: tuple[str, ...] = field(default=(), kw_only=True)
    # figure 7's folder of filled review sheets (careqa.review.filled_sheets) where its page is drawn
    review_sheets: str | None = field(default=None, kw_only=True)
    # what the config does not make and why, and its settings that cannot take effect (set by careval.plan): the
    # report's first page where there are any
    notes: tuple[str, ...] = field(default=(), kw_only=True)

    def sets(self, family: str) -> tuple[str, ...]:
        if (family == "mcqa_vs_elo" and not self.elo) or (
            family == "relaxed_perplexity_vs_all" and self.relaxed_perplexity_anchor is None
        ):
            return ()
        return self.figure_sets[family]

    @cached_property
    def figures(self) -> tuple[FigureSpec, ...]:
        """Every figure of the report, in its page order: each correlation figure once per model set."""
        figures = [figure("run_notes")] if self.notes else []
        figures += [figure("scores")]
        figures += [figure("mcqa_vs_open", s) for s in self.sets("mcqa_vs_open")]
        figures += [figure("metric_x_metric", s, b) for s in self.sets("metric_x_metric") for b in self.open_benchmarks]
        figures += [
            figure("benchmark_x_benchmark", s, method=m)
            for s in self.sets("benchmark_x_benchmark")
            for m in self.methods
        ]
        figures += [figure("mcqa_vs_elo", s) for s in self.sets("mcqa_vs_elo")]
        figures += [figure("rankings", s, b) for s in self.sets("rankings") for b in self.open_benchmarks]
        figures += [figure("relaxed_perplexity_vs_all", s) for s in self.sets("relaxed_perplexity_vs_all")]
        figures += [figure("resilience", benchmark=b) for b in self.resilience_benchmarks]
        figures += [
            figure(kind, benchmark=b) for b in self.consistency_benchmarks for kind in ("consistency", "consistency_cv")
        ]
        figures += [figure("careqa_table4")] if "table4" in self.careqa_pages else []
        figures += [figure("careqa_categories", benchmark=s) for s in ("closed", "open") if s in self.careqa_pages]
        figures += [figure("careqa_review")] if "review" in self.careqa_pages else []
        caption, category = FIGURE_KINDS["paper_table"]
        figures += [FigureSpec(table.name, "paper_table", caption, category) for table in self.paper_tables]
        # the paired comparisons of the models each ranking figure ranks, on every benchmark, then the cost page
        for s in self.sets("rankings"):
            figures += [figure(k, s, b) for b in self.benchmarks for k in ("comparisons", "comparison_groups")]
            figures.append(figure("adjacent_pairs", s))
        if self.cost:
            figures.append(figure("cost"))
        figures += [
            figure(kind, benchmark=b)
            for b in self.jury_benchmarks
            for kind in ("jury", "judge_agreement", "judge_bias")
            + (("jury_stability",) if b in self.resilience_benchmarks + self.consistency_benchmarks else ())
        ]
        figures += [figure("human_agreement")] if self.human_ratings else []
        figures += [figure("study", study=page.name) for page in self.studies]
        figures += [figure("table6")] if self.table6 else []
        return tuple(figures)

    def figure_names(self) -> list[str]:
        return [f.name for f in self.figures]

    @cached_property
    def figure_index_job(self) -> FigureIndexJob:
        return FigureIndexJob(figures=self.figures)

    @cached_property
    def report_job(self) -> ReportJob:
        """The correlations job's spec (`params: job=`): exactly the settings it reads."""
        return ReportJob(
            figures=self.figures,
            methods=tuple(self.methods),
            model_sets=dict(self.model_sets),
            mcqa_average=None if self.mcqa_average is None else tuple(self.mcqa_average),
            relaxed_perplexity_anchor=self.relaxed_perplexity_anchor,
            bootstrap=self.bootstrap,
            cluster_min_correlation=None if self.clusters is not None else self.cluster_min_correlation,
            clusters=self.clusters,
            resilience_k=self.resilience_k if self.resilience_benchmarks else None,
            consistency_r=self.consistency_r if self.consistency_benchmarks else None,
            view_metrics=self.view_metrics,
            resilience_scaling=self.resilience_scaling,
            paper_tables=tuple(table.name for table in self.paper_tables),
            comparison_alpha=self.comparisons.get("alpha"),
            comparison_adjust=self.comparisons.get("adjust"),
            cost=dict(self.cost) or None,
            studies=self.studies,
            paper_tasks=dict(self.paper_tasks),
            additions=self.additions,
            review_sheets=self.review_sheets if "review" in self.careqa_pages else None,
            notes=self.notes,
        )

    @property
    def view_metrics(self) -> tuple[str, ...] | None:
        """The paper's eleven open-ended metrics (Prometheus: judge_<main rubric>) in view `paper`; None in `all`."""
        if self.metric_view == "all":
            return None
        return paper_metrics(self.rubrics[0] if self.rubrics else None)

    @cached_property
    def paper_tables_job(self) -> PaperTablesJob:
        """The paper_tables job's spec: its tables, the judge's rubrics and the bootstrap of the intervals."""
        return PaperTablesJob(
            tables=self.paper_tables,
            rubrics=self.rubrics,
            bootstrap=self.bootstrap,
            mcqa_average=None if self.mcqa_average is None else tuple(self.mcqa_average),
            additions=tuple(b for b in self.additions if any(b in table.benchmarks for table in self.paper_tables)),
        )


def _benchmarks(section: dict, key: str, open_benchmarks: list[str]) -> list[str]:
    chosen = section["benchmarks"]
    if chosen is None:
        return list(open_benchmarks)
    unknown = [b for b in chosen if b not in open_benchmarks]
    if unknown:
        raise AnalysisConfigError(
            f"analysis.{key}.benchmarks: {', '.join(unknown)} is not an open-ended benchmark of "
            f"this config (open-ended: {', '.join(open_benchmarks) or 'none'})"
        )
    return list(chosen)


def _model_sets(analysis: dict, models: list[str]) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The sets of every figure family, each member a key of `models`; a dangling name is one line."""
    defined = {name: tuple(members) for name, members in analysis["model_sets"].items()}
    for name, members in defined.items():
        unknown = [m for m in members if m not in models]
        if unknown:
            raise AnalysisConfigError(
                f"analysis.model_sets.{name}: {', '.join(unknown)} is not a key of `models` (have: {', '.join(models)})"
            )
    defined[ALL] = tuple(sorted(models))  # by name: the order of the `models` mapping is no setting
    figure_sets = {family: tuple(analysis["figure_sets"][family]) for family in SET_FAMILIES}
    for family, names in figure_sets.items():
        unknown = [name for name in names if name not in defined]
        if unknown:
            raise AnalysisConfigError(
                f"analysis.figure_sets.{family}: {', '.join(unknown)} is not a model set "
                f"(analysis.model_sets has: {', '.join(n for n in defined if n != ALL) or 'none'}; "
                f"or {ALL})"
            )
    used = {name for names in figure_sets.values() for name in names}
    return {name: members for name, members in defined.items() if name in used}, figure_sets


def _mcqa_average(analysis: dict, tasks: dict[str, str], known: dict[str, str] | None) -> list[str]:
    """The configured average's members that this config runs; a name that is no mcqa benchmark is an error."""
    chosen = analysis["mcqa_average"]  # the schema fills the default (the paper's set)
    # checked against the catalogue where given, so a misspelt name is caught even when it is not run
    unknown = [b for b in chosen if known is not None and b not in known]
    if unknown:
        raise AnalysisConfigError(f"analysis.mcqa_average: {', '.join(unknown)} is not a benchmark of the catalogue")
    catalogue = known if known is not None else tasks
    not_mcqa = [b for b in chosen if catalogue.get(b, "mcqa") != "mcqa"]
    if not_mcqa:
        raise AnalysisConfigError(f"analysis.mcqa_average: {', '.join(not_mcqa)} is not an mcqa benchmark")
    return [b for b in chosen if b in tasks]


def _bootstrap(bootstrap: dict) -> Bootstrap | None:
    if not bootstrap["resamples"]:
        return None
    return Bootstrap(int(bootstrap["resamples"]), bootstrap["confidence"], int(bootstrap["seed"]))


def _careqa_pages(careqa: dict, models: dict) -> tuple[str, ...]:
    """Table 4 and figures 5-6 where careqa.statistics.tokenizer names a model; figure 7 too where
    careqa.review.filled_sheets names a folder, whether or not it holds filled sheets yet: the plan follows the
    config, not what lies on disk when it is read (a page says so while the folder is empty)."""
    tokenizer = careqa["statistics"]["tokenizer"]
    if tokenizer is None:
        return ()
    if tokenizer not in models:
        raise AnalysisConfigError(
            f"careqa.statistics.tokenizer: '{tokenizer}' is not a key of `models` (have: {', '.join(models)})"
        )
    review = ("review",) if careqa["review"]["filled_sheets"] is not None else ()
    return ("table4", "closed", "open", *review)


def analysis_plan(
    config: dict, open_benchmarks: list[str], tasks: dict[str, str] | None = None, known: dict[str, str] | None = None
) -> AnalysisPlan:
    """The plan of a config (defaults filled from the schema); raise AnalysisConfigError on a dangling name.

    `tasks`: the task of each benchmark of the run; `known`: that of each catalogue benchmark.
    """
    analysis = with_schema_defaults(config.get("analysis"), "analysis")
    resilience, consistency = analysis["resilience"], analysis["consistency"]
    rephraser = resilience["rephraser"]
    if isinstance(rephraser, str) and rephraser not in config["models"]:
        raise AnalysisConfigError(
            f"analysis.resilience.rephraser: '{rephraser}' is not a key of `models` "
            f"(have: {', '.join(config['models'])})"
        )
    model_sets, figure_sets = _model_sets(analysis, list(config["models"]))
    careqa = with_schema_defaults(config.get("careqa"), "careqa")
    anchor = analysis["relaxed_perplexity_anchor"]
    if anchor is not None and anchor not in open_benchmarks:
        raise AnalysisConfigError(
            f"analysis.relaxed_perplexity_anchor: '{anchor}' is not an open-ended benchmark of "
            f"this config (open-ended: {', '.join(open_benchmarks) or 'none'})"
        )
    return AnalysisPlan(
        open_benchmarks=list(open_benchmarks),
        methods=list(analysis["methods"]),
        resilience_benchmarks=_benchmarks(resilience, "resilience", open_benchmarks) if rephraser else [],
        consistency_benchmarks=_benchmarks(consistency, "consistency", open_benchmarks) if consistency["r"] else [],
        elo=analysis["elo_csv"] is not None,
        model_sets=model_sets,
        figure_sets=figure_sets,
        relaxed_perplexity_anchor=anchor,
        mcqa_average=None if tasks is None else _mcqa_average(analysis, tasks, known),
        bootstrap=_bootstrap(analysis["bootstrap"]),
        cluster_min_correlation=float(analysis["cluster_min_correlation"]),
        clusters=analysis["clusters"],
        resilience_k=int(resilience["k"]),
        consistency_r=int(consistency["r"]),
        careqa_pages=_careqa_pages(careqa, config["models"]),
        review_sheets=careqa["review"]["filled_sheets"],
        metric_view=analysis["metric_view"],
        rubrics=_rubrics(config),
        resilience_scaling=resilience["scaling"],
        benchmarks=list(tasks) if tasks is not None else list(open_benchmarks),
        comparisons={key: analysis["comparisons"][key] for key in ("alpha", "adjust")},
        cost=dict(analysis["cost"]),
    )


def _rubrics(config: dict) -> tuple[str, ...]:
    """metrics.judge.rubrics by name, in config order: the first is the main one (the paper's Prometheus)."""
    rubrics = ((config.get("metrics") or {}).get("judge") or {}).get("rubrics") or ()
    return tuple(r if isinstance(r, str) else r["name"] for r in rubrics)
