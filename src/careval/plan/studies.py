"""Studies (config `studies:`): settings swept over named variants against the run's own setting, planned as jobs.

A study sweeps the settings of one section of the config over variants (the grid of their values), for some models
on some benchmarks. Each variant is a plan (careval.plan.run.Plan) built by the run's own code from the run's config
with the swept settings applied, so its jobs' specs are exactly what its jobs read. A variant's job whose spec, and
whose inputs, equal a job of the run is that job: its file is the run's, never computed again. The others are the
study's jobs, written under results/studies/<study>/<variant>/ in the layout of results/ (and run<r>/ below it for
a study with runs). The study's sample table then holds every variant's per-sample values beside the baseline's.

Sections, by what they re-run (the study's kind):
- model: a model entry's settings (chat_template, dtype, system_prompt, ...) for each of the study's models;
  models: other models in place of each of the study's models (a model of `models`, or one of this study only);
  benchmark: what a model job reads of a benchmark entry (prompt, mcqa_style, ...), for each of the study's
  benchmarks; generation: the decoding of the evaluated answers. Kind "model": each variant re-runs the jobs of the
  study's models that read the setting, and what follows them (their scores, grades).
- metrics.<family>: the options of one metric family. Kind "metric": that family's scoring jobs.
- analysis.resilience: the rephrasing of the resilience analysis, each variant over `runs` seeds (run 0: the
  run's own seed). Kind "analysis": the rephrasings, their scores and grades; a sample's value is the per-sample
  variance over its rephrasings, averaged over the runs.

The baseline of a model is the run itself: a swept variant whose jobs are all the run's for that model is named as
its baseline; where none is, the run's own values are the study's "baseline" variant of that model.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from careval.analysis.studies.tables import StudiesJob
from careval.config import ConfigError
from careval.metrics.registry import FAMILIES
from careval.plan.run import Plan
from careval.plan.study import BASELINE, Study, Variant
from careval.plan.study_kinds import study_kind
from careval.plan.variants import grid, variant_plans
from careval.specs import Example

# --- building the studies of a config


def build_studies(raw: dict, main: Plan, schema: dict | None = None) -> dict[str, Study]:
    """Every study of the config (`raw`, as read), each variant planned by the run's own code (build_run_plan) on
    the run's config with its settings; a ConfigError names the study and the key."""
    studies = {}
    with_examples = []
    # by name, as the models of a study: a config's key order decides no job (the rerun-scope test sorts its keys)
    for name, settings in sorted((main.config.get("studies") or {}).items()):
        study = _study(name, settings, raw, main, schema)
        if study.examples:
            with_examples.append(name)
        studies[name] = study
    if len(with_examples) > 1:
        raise ConfigError(
            f"studies: {', '.join(with_examples)} all have examples, but the run writes one Table 6 "
            "(results/tables/table6_relaxed_perplexity_examples.*): keep them in one study"
        )
    return studies


def _study(name: str, settings: dict, raw: dict, main: Plan, schema: dict | None) -> Study:
    key = f"studies.{name}"
    ((section, sweep),) = settings["sweep"].items()
    family = section.split(".", 1)[1] if section.startswith("metrics.") else None
    if family is not None and family not in FAMILIES:
        raise ConfigError(f"{key}.sweep: '{family}' is not a metric family (have: {', '.join(FAMILIES)})")
    kind = study_kind(section).reruns
    models = tuple(sorted(settings.get("models") or main.models))
    unknown = [m for m in models if m not in main.models]
    if unknown:
        raise ConfigError(
            f"{key}.models: {', '.join(unknown)} is not a key of `models` (have: {', '.join(main.models)})"
        )
    runs = int(settings["runs"])
    if runs > 1 and kind != "analysis":
        raise ConfigError(f"{key}.runs: only a study of analysis.resilience repeats its rephrasings over runs")
    if section == "analysis.resilience" and main.rephraser is None:
        raise ConfigError(f"{key}.sweep: analysis.resilience is off in this run (set analysis.resilience.rephraser)")
    given = settings.get("benchmarks")
    _check_benchmarks(key, given, kind, section, family, main)
    base = _config_without_studies(raw)
    variants = {
        variant: Variant(variant, variant_plans(key, variant, section, values, base, main, models, given, runs, schema))
        for variant, values in grid(f"{key}.sweep.{section}", section, sweep)
    }
    baseline = Variant(BASELINE, variant_plans(key, BASELINE, section, (), base, main, models, given, runs, schema))
    variants[BASELINE] = baseline
    default = _default_benchmarks(kind, family, main)
    study = Study(
        name=name,
        section=section,
        kind=kind,
        description=settings.get("description") or "",
        models=models,
        benchmarks=tuple(given or default),
        family=family,
        runs=runs,
        variants=variants,
        main=main,
        results_dir=main.results_dir,
        examples=_examples(key, settings.get("examples"), main),
        review=dict(settings["review_sheet"]),
    )
    if kind == "model" and not given:
        # the benchmarks on which some variant's jobs differ from the baseline's
        changed = [
            b
            for b in study.benchmarks
            if any(
                _signature(study, v, m, (b,)) != _signature(study, BASELINE, m, (b,))
                for v in study.swept
                for m in models
            )
        ]
        study = replace(study, benchmarks=tuple(changed))
    if not study.benchmarks:
        raise ConfigError(f"{key}: no benchmark of this run is compared (set {key}.benchmarks)")
    study = replace(study, baselines={m: _baseline_of(study, m) for m in models})
    _check_variants_differ(key, study)
    return study


def _config_without_studies(raw: dict) -> dict:
    config = copy.deepcopy(raw)
    config.pop("studies", None)
    config["benchmarks"] = {name: dict(entry or {}) for name, entry in config["benchmarks"].items()}
    return config


def _default_benchmarks(kind: str, family: str | None, main: Plan) -> list[str]:
    if kind == "metric":
        return [b for b in main.benchmarks if family in main.families(b)]
    if kind == "analysis":
        return list(main.analysis.resilience_benchmarks)
    return list(main.benchmarks)


def _check_benchmarks(key, given, kind, section, family, main) -> None:
    if given is None:
        if section == "benchmark":
            raise ConfigError(f"{key}.benchmarks: name the benchmarks whose entries the sweep changes")
        return
    unknown = [b for b in given if b not in main.benchmarks]
    if unknown:
        raise ConfigError(
            f"{key}.benchmarks: {', '.join(unknown)} is not a benchmark of this run (have: {', '.join(main.benchmarks)})"
        )
    if kind == "metric":
        unscored = [b for b in given if family not in main.families(b)]
        if unscored:
            raise ConfigError(f"{key}.benchmarks: {', '.join(unscored)} is not scored with {family} in this run")
    if kind == "analysis":
        closed = [b for b in given if b not in main.open_benchmarks]
        if closed:
            raise ConfigError(f"{key}.benchmarks: {', '.join(closed)} is not an open-ended benchmark (rephrasing)")


def _examples(key: str, examples: list | None, main: Plan) -> tuple[Example, ...]:
    out = []
    for i, example in enumerate(examples or []):
        benchmark = example["benchmark"]
        if benchmark not in main.open_benchmarks:
            raise ConfigError(
                f"{key}.examples[{i}].benchmark: '{benchmark}' is not an open-ended benchmark of this run "
                f"(open-ended: {', '.join(main.open_benchmarks) or 'none'})"
            )
        out.append(
            Example(
                benchmark,
                example.get("id"),
                example.get("question"),
                *(tuple(example[k]) if k in example else None for k in ("must_have", "nice_to_have")),
            )
        )
    return tuple(out)


def _signature(study: Study, variant: str, model: str, benchmarks: tuple[str, ...] | None = None) -> tuple:
    """What decides a variant's files of one model (on `benchmarks`, default the study's): the spec of every job
    behind them, their inputs' jobs included."""
    out: list[str] = []
    for plan in study.variants[variant].plans:
        for b in benchmarks or study.benchmarks:
            if study.kind == "analysis":
                out += [repr(plan.rephrase_job()), repr(plan.score_job(b, plan.repeat_families()))]
                if plan.repeats_judged(b):
                    out.append(repr(plan.judging(repeats=True)))
                continue
            out.append(repr(plan.infer_job(model, b)))
            out += [repr(plan.family_jobs(model, b, family)) for family in study.families(variant, b)]
    return tuple(out)


def _baseline_of(study: Study, model: str) -> str:
    """The swept variant whose every job of the model is the baseline's (the run's own), else `baseline`."""
    own = _signature(study, BASELINE, model)
    return next((v for v in study.swept if _signature(study, v, model) == own), BASELINE)


def _check_variants_differ(key: str, study: Study) -> None:
    """Two variants that run the same jobs, or a sweep whose only variant is the baseline, is a config error."""
    for model in study.models:
        seen: dict[tuple, str] = {}
        for variant in study.swept:
            signature = _signature(study, variant, model)
            if signature in seen:
                raise ConfigError(f"{key}: variants {seen[signature]} and {variant} run the same jobs for {model}")
            seen[signature] = variant
    if len(study.swept) == 1 and all(study.baselines[m] != BASELINE for m in study.models):
        raise ConfigError(f"{key}: its only variant is the run's own setting: nothing to compare")


def studies_job(plan: Plan) -> StudiesJob:
    """studies_summary: every study of the plan, tested with the settings of analysis.comparisons."""
    settings = plan.config["analysis"]["comparisons"]
    keys = ("resamples", "permutations", "exact_limit", "confidence", "seed")
    return StudiesJob(
        studies=tuple(study.summary() for study in plan.studies.values()), **{k: settings[k] for k in keys}
    )
