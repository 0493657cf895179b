"""Which analyses and figures a config asks for (resilience, self-consistency, Elo), checked once at start-up."""
from __future__ import annotations

from dataclasses import dataclass


class AnalysisConfigError(ValueError):
    """An analysis setting that names something the config does not have; one line, naming the key."""


@dataclass(frozen=True)
class AnalysisPlan:
    """The benchmarks each analysis runs on and the figures that follow; the rules declare exactly these outputs."""

    open_benchmarks: list[str]
    methods: list[str]
    resilience_benchmarks: list[str]
    consistency_benchmarks: list[str]
    elo: bool
    # the run's members of mcqa_weighted_average (analysis.mcqa_average), in config order; None: every mcqa benchmark
    mcqa_average: list[str] | None = None

    def figure_names(self) -> list[str]:
        names = ["scores", "mcqa_vs_open"]
        names += [f"metric_x_metric_{b}" for b in self.open_benchmarks]
        names += [f"benchmark_x_benchmark_{m}" for m in self.methods]
        names += ["mcqa_vs_elo"] if self.elo else []
        names += [f"rankings_{b}" for b in self.open_benchmarks]
        names += [f"resilience_{b}" for b in self.resilience_benchmarks]
        names += [name for b in self.consistency_benchmarks for name in (f"consistency_{b}", f"consistency_cv_{b}")]
        return names


def _benchmarks(section: dict, key: str, open_benchmarks: list[str]) -> list[str]:
    chosen = section.get("benchmarks")
    if chosen is None:
        return list(open_benchmarks)
    unknown = [b for b in chosen if b not in open_benchmarks]
    if unknown:
        raise AnalysisConfigError(f"analysis.{key}.benchmarks: {', '.join(unknown)} is not an open-ended benchmark of "
                                  f"this config (open-ended: {', '.join(open_benchmarks) or 'none'})")
    return list(chosen)


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


def analysis_plan(config: dict, open_benchmarks: list[str], tasks: dict[str, str] | None = None,
                  known: dict[str, str] | None = None) -> AnalysisPlan:
    """The plan of a validated config (defaults filled); raise AnalysisConfigError on a dangling name.

    `tasks`: the task of each benchmark of the run; `known`: that of each catalogue benchmark.
    """
    analysis = config.get("analysis", {})
    resilience, consistency = analysis.get("resilience", {}), analysis.get("consistency", {})
    rephraser = resilience.get("rephraser")
    if rephraser is not None and rephraser not in config["models"]:
        raise AnalysisConfigError(f"analysis.resilience.rephraser: '{rephraser}' is not a key of `models` "
                                  f"(have: {', '.join(config['models'])})")
    return AnalysisPlan(
        open_benchmarks=list(open_benchmarks),
        methods=list(analysis.get("methods", ["pearson", "spearman"])),
        resilience_benchmarks=_benchmarks(resilience, "resilience", open_benchmarks) if rephraser else [],
        consistency_benchmarks=_benchmarks(consistency, "consistency", open_benchmarks) if consistency.get("r", 0) else [],
        elo=analysis.get("elo_csv") is not None,
        mcqa_average=None if tasks is None else _mcqa_average(analysis, tasks, known),
    )
