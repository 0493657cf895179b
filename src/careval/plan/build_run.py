"""One config -> the run's plan (:func:`build_run_plan`): validate against the schema, fill the schema's defaults,
cross-check every name, and build the typed specs of careval.plan.run.Plan.

The Snakefile calls :func:`careval.plan.build_plan` once, which plans the run here and its studies' variants by this
same function; every config error is a one-line :class:`ConfigError` raised here, before any job. A family a config
skips (``metrics.skip``) or never reaches (no benchmark for it) never needs its section: ``metrics.skip: [judge]``
without ``metrics.judge`` plans.
"""

from __future__ import annotations

from dataclasses import replace

from careval.analysis.elo import EloFileError, check_elo
from careval.analysis.plan import AnalysisConfigError, analysis_plan
from careval.analysis.tables.paper_tables import PAPER_TASKS, planned_tables, unfilled_tables
from careval.config import ConfigError, prepare_config
from careval.datasets.definition import BenchmarkDefinitionError
from careval.datasets.loaders import SourceError
from careval.datasets.normalise import check_fields_in_source
from careval.datasets.registry import REGISTRY, get_benchmark
from careval.inputs import resolve_input
from careval.models.prepare import check_local_folder
from careval.models.source import ModelSourceError
from careval.models.spec import ModelSpec, model_spec
from careval.plan.families import LLM_FAMILIES, scored_families
from careval.plan.roles import configured_careqa_llms, configured_judge, configured_jury, configured_rephraser
from careval.plan.run import Plan
from careval.plan.run_checks import check_analysis_settings, check_capabilities, ineffective_settings

__all__ = ["ConfigError", "build_run_plan"]


def build_run_plan(config: dict, schema: dict | None = None) -> Plan:
    """Validate `config` (raw, as read from YAML) and build the plan of the run itself (every part but its studies:
    careval.plan.build_plan); ConfigError names the key. A study's variant is planned by this same function."""
    raw_analysis = config.get("analysis") or {}  # what the config sets itself, before the schema's defaults
    config = prepare_config(config, schema)
    sizes, resources, models_dir = config["model_sizes"], config["resources"], config["models_dir"]

    def spec_of(name: str, entry: dict, key: str) -> ModelSpec:
        spec = model_spec(name, entry, models_dir=models_dir, model_sizes=sizes, resources=resources, key=key)
        try:
            check_local_folder(name, entry)
        except ModelSourceError as error:  # named as models.<name> by the library; an inline judge lives elsewhere
            raise ConfigError(key + str(error)[len(f"models.{name}") :]) from None
        return spec

    models = {name: spec_of(name, entry, f"models.{name}") for name, entry in config["models"].items()}
    # A mapping's key order is no setting: benchmarks follow the catalogue's order (the paper's Table 1), then the
    # config's own by name, so the figures drawn per benchmark come in one order however the config lists them.
    catalogue = {name: position for position, name in enumerate(REGISTRY)}
    config["benchmarks"] = dict(
        sorted(config["benchmarks"].items(), key=lambda item: (catalogue.get(item[0], len(catalogue)), item[0]))
    )
    benchmarks = {}
    for name, entry in config["benchmarks"].items():
        try:
            benchmarks[name] = get_benchmark(name, entry)
            if name not in REGISTRY or "fields" in entry:
                check_fields_in_source(benchmarks[name], f"benchmarks.{name}")
        except (BenchmarkDefinitionError, SourceError) as error:
            raise ConfigError(str(error)) from None
        paper_task = benchmarks[name].paper_task
        if paper_task is not None and paper_task not in PAPER_TASKS:
            raise ConfigError(
                f"benchmarks.{name}.paper_task: unknown paper task '{paper_task}' (known: {', '.join(PAPER_TASKS)})"
            )
    limits = {name: overrides.get("limit") or config["limit"] for name, overrides in config["benchmarks"].items()}
    open_benchmarks = [name for name, entry in benchmarks.items() if entry.task == "open"]

    metrics = config["metrics"]
    skipped = frozenset(metrics["skip"])
    family_benchmarks: dict[str, tuple[str, ...] | None] = {}
    for family in LLM_FAMILIES:
        chosen = (metrics.get(family) or {}).get("benchmarks")
        unknown = [b for b in chosen or [] if b not in open_benchmarks]
        if unknown:
            raise ConfigError(
                f"metrics.{family}.benchmarks: {', '.join(unknown)} is not an open-ended benchmark "
                f"of this config (open-ended: {', '.join(open_benchmarks) or 'none'})"
            )
        family_benchmarks[family] = None if chosen is None else tuple(chosen)

    try:
        analysis = analysis_plan(
            config,
            open_benchmarks,
            {name: entry.task for name, entry in benchmarks.items()},
            # the catalogue's and this config's own: a misspelt name is caught even when it is not run
            {**{name: entry.task for name, entry in REGISTRY.items()}, **{n: e.task for n, e in benchmarks.items()}},
        )
    except AnalysisConfigError as error:
        raise ConfigError(str(error)) from None
    elo_warning = None
    if config["analysis"]["elo_csv"] is not None:
        # read once here, so a malformed or misspelt CSV stops the run before any inference
        try:
            # only the models of the MCQA-vs-Elo figures (figures 8-9) are named when they lack an Elo
            drawn = {m for s in analysis.sets("mcqa_vs_elo") for m in analysis.model_sets[s]}
            elo_path = resolve_input(config["analysis"]["elo_csv"], "analysis.elo_csv")  # named as the config wrote it
            elo_check = check_elo(elo_path, list(models), drawn)
            elo_warning = elo_check.warning()
        except EloFileError as error:
            raise ConfigError(f"analysis.elo_csv: {error}") from None

    def families(benchmark: str) -> list[str]:  # Plan.families, before the plan is made
        return scored_families(benchmarks[benchmark], benchmark, skipped, family_benchmarks)

    relaxed = metrics["relaxed_perplexity"]
    if any("relaxed_perplexity" in families(b) for b in benchmarks) and relaxed["l"] > relaxed["s"]:
        # the estimator keeps the l most likely of s sampled continuations (careval.metrics.relaxed_perplexity)
        raise ConfigError(f"metrics.relaxed_perplexity.l: {relaxed['l']} is more than s ({relaxed['s']}): need l <= s")
    check_analysis_settings(config, raw_analysis, benchmarks, families, analysis.rubrics)
    anchor = analysis.relaxed_perplexity_anchor
    if anchor is not None and "relaxed_perplexity" not in families(anchor):
        raise ConfigError(
            f"analysis.relaxed_perplexity_anchor: '{anchor}' is not scored with Relaxed Perplexity "
            f"under this config (see metrics.relaxed_perplexity.benchmarks and metrics.skip)"
        )
    judged = any("judge" in families(b) for b in open_benchmarks) and bool(models)
    judge = configured_judge(config, models, spec_of) if judged else None
    judges = configured_jury(config, models, spec_of) if judged else {}
    judge = next(iter(judges.values()), judge)
    rephraser = configured_rephraser(config, models, spec_of) if analysis.resilience_benchmarks else None
    entries = dict(config["models"])
    if judges:
        for spec, value in zip(judges.values(), config["metrics"]["judge"]["models"]):
            if isinstance(value, dict):
                entries[spec.name] = value
    for spec, value in (
        (judge, judge and config["metrics"]["judge"].get("model")),
        (rephraser, rephraser and config["analysis"]["resilience"]["rephraser"]),
    ):
        if isinstance(value, dict) and spec is not None:
            entries[spec.name] = value
    # what the config does not make and the settings it cannot apply: warnings, and the report's first page
    warnings = ineffective_settings(config, judges, analysis, benchmarks)
    off = lambda family: "metrics.skip" if family in skipped else f"metrics.{family}.benchmarks"  # noqa: E731
    # the analysis' facts known once the families of each benchmark and the judges are: the Appendix E tables the
    # run's benchmarks fill, the jury's benchmarks, and the report's notes
    tasks = {name: (entry.task, entry.paper_task) for name, entry in benchmarks.items()}
    analysis = replace(
        analysis,
        paper_tables=planned_tables(tasks, families),
        paper_tasks={name: entry.paper_task for name, entry in benchmarks.items() if entry.paper_task is not None},
        additions=tuple(name for name, entry in benchmarks.items() if entry.addition),
        jury_benchmarks=tuple(b for b in open_benchmarks if "judge" in families(b)) if judges else (),
        human_ratings=config["analysis"]["human_ratings"] is not None,
        notes=unfilled_tables(tasks, families, off) + warnings,
    )
    plan = Plan(
        config=config,
        models=models,
        benchmarks=benchmarks,
        limits=limits,
        skipped_families=skipped,
        family_benchmarks=family_benchmarks,
        analysis=analysis,
        judge=judge,
        judges=judges,
        rephraser=rephraser,
        careqa_llms=configured_careqa_llms(config, models, resources),
        entries=entries,
        elo_warning=elo_warning,
        warnings=warnings,
    )
    check_capabilities(plan)
    return plan
