"""Which analyses and figures a config asks for (resilience, self-consistency, Elo, model sets), checked once at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from careval.config import with_schema_defaults

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


class AnalysisConfigError(ValueError):
    """An analysis setting that names something the config does not have; one line, naming the key."""


@dataclass(frozen=True)
class AnalysisPlan:
    """The benchmarks each analysis runs on and the figures that follow; the rules declare exactly these outputs.

    model_sets: every set a figure uses -> its models (`all` resolved to the evaluated models);
    figure_sets: figure family -> the sets it is drawn for, in config order.
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

    def sets(self, family: str) -> tuple[str, ...]:
        if (family == "mcqa_vs_elo" and not self.elo) or (
            family == "relaxed_perplexity_vs_all" and self.relaxed_perplexity_anchor is None
        ):
            return ()
        return self.figure_sets[family]

    def figure_names(self) -> list[str]:
        names = ["scores"]
        names += [f"mcqa_vs_open_{s}" for s in self.sets("mcqa_vs_open")]
        names += [f"metric_x_metric_{s}_{b}" for s in self.sets("metric_x_metric") for b in self.open_benchmarks]
        names += [f"benchmark_x_benchmark_{s}_{m}" for s in self.sets("benchmark_x_benchmark") for m in self.methods]
        names += [f"mcqa_vs_elo_{s}" for s in self.sets("mcqa_vs_elo")]
        names += [f"rankings_{s}_{b}" for s in self.sets("rankings") for b in self.open_benchmarks]
        names += [f"relaxed_perplexity_vs_all_{s}" for s in self.sets("relaxed_perplexity_vs_all")]
        names += [f"resilience_{b}" for b in self.resilience_benchmarks]
        names += [name for b in self.consistency_benchmarks for name in (f"consistency_{b}", f"consistency_cv_{b}")]
        return names


def _benchmarks(section: dict, key: str, open_benchmarks: list[str]) -> list[str]:
    chosen = section.get("benchmarks")
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
    defined[ALL] = tuple(models)
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


def analysis_plan(
    config: dict, open_benchmarks: list[str], tasks: dict[str, str] | None = None, known: dict[str, str] | None = None
) -> AnalysisPlan:
    """The plan of a config (defaults filled from the schema); raise AnalysisConfigError on a dangling name.

    `tasks`: the task of each benchmark of the run; `known`: that of each catalogue benchmark.
    """
    analysis = with_schema_defaults(config.get("analysis"), "analysis")
    resilience, consistency = analysis["resilience"], analysis["consistency"]
    rephraser = resilience.get("rephraser")
    if isinstance(rephraser, str) and rephraser not in config["models"]:
        raise AnalysisConfigError(
            f"analysis.resilience.rephraser: '{rephraser}' is not a key of `models` "
            f"(have: {', '.join(config['models'])})"
        )
    model_sets, figure_sets = _model_sets(analysis, list(config["models"]))
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
    )
