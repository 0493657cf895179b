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
import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Any

from careval.analysis.studies.rephrasing_review import RephrasingReviewJob, ReviewSource
from careval.analysis.studies.tables import SourceLabel, StudiesJob, StudyPage, StudySummary, StudyTableJob
from careval.analysis.tables.table6 import Table6Job
from careval.config import ConfigError
from careval.metrics.registry import FAMILIES
from careval.plan.run import Plan, build_run_plan
from careval.specs import Example, ExamplesJob

BASELINE = "baseline"


@dataclass(frozen=True)
class StudyKind:
    """A kind of study, one registered entry: the config section its sweep names, the settings it may sweep there,
    where a variant's settings go, what it re-runs, and the job kinds (rules) reading those settings."""

    section: str  # a key of a study's `sweep` (a metric family's: "metrics.<family>", registered as "metrics")
    reruns: str  # "model" (the study's models' jobs), "metric" (the family's scoring), "analysis" (the rephrasings)
    settings: tuple[str, ...]  # what it may sweep (a dotted setting's first part); metrics: the family's options
    # where a variant's values go: "models" (each of the study's models' entries), "benchmarks" (each of its
    # benchmarks' entries), "section" (the config section itself), "swap" (section models: other models in place)
    target: str
    jobs: tuple[str, ...] = ()


# every study kind, by section (register_study_kind); the schema's sweep sections are checked against these
STUDY_KINDS: dict[str, StudyKind] = {}


def register_study_kind(kind: StudyKind) -> StudyKind:
    STUDY_KINDS[kind.section] = kind
    return kind


_MODEL_JOBS = ("infer_open", "infer_closed", "relaxed_perplexity", "score_family", "judge")
# the keys of a model entry a study may sweep: what changes a model's outputs, its weights aside (section `models`)
register_study_kind(
    StudyKind(
        "model",
        "model",
        # a served model's too: its API, served model or address (endpoint.api, ...), its tokenizer
        (
            "backend",
            "chat_template",
            "system_prompt",
            "dtype",
            "batch_size",
            "max_length",
            "vllm_args",
            "endpoint",
            "tokenizer",
        ),
        "models",
        _MODEL_JOBS,
    )
)
register_study_kind(StudyKind("models", "model", (), "swap", _MODEL_JOBS))
# the keys of a benchmark entry a model job reads (careval.specs.PROMPT_KEYS, the layout aside, and the decoding)
register_study_kind(
    StudyKind(
        "benchmark", "model", ("prompt", "mcqa_style", "mode", "max_new_tokens", "stop"), "benchmarks", _MODEL_JOBS
    )
)
register_study_kind(
    StudyKind("generation", "model", ("max_new_tokens", "temperature", "top_p", "seed", "stop"), "section", _MODEL_JOBS)
)
register_study_kind(
    StudyKind(
        "analysis.resilience",
        "analysis",
        ("rephraser", "k", "limit", "sampling"),
        "section",
        ("rephrase", "score_rephrase", "judge_repeats"),
    )
)
# a metric family's options (its registry entry's): that family's scoring jobs
register_study_kind(StudyKind("metrics", "metric", (), "section", ("score_family", "relaxed_perplexity", "judge")))


def study_kind(section: str) -> StudyKind:
    """The registered kind of a sweep's section (metrics.<family>: the family's options)."""
    if section.startswith("metrics."):
        family = section.split(".", 1)[1]
        return replace(STUDY_KINDS["metrics"], section=section, settings=tuple(FAMILIES[family].options))
    return STUDY_KINDS[section]


# a value named by itself in a list of values (else: give a mapping name -> value)
_WORD = re.compile(r"^[A-Za-z0-9._-]{1,40}$")


@dataclass(frozen=True)
class Variant:
    """One variant: its name (its settings, `l=5,s=10`) and its plan per run (one plan but for a study with runs)."""

    name: str
    plans: tuple[Plan, ...]

    @property
    def plan(self) -> Plan:
        return self.plans[0]


@dataclass(frozen=True)
class Stage:
    """Where one output of one variant comes from: the run's file (`main`, the run's model whose job it is) or the
    study's own job (`main` None)."""

    main: str | None

    @property
    def shared(self) -> bool:
        return self.main is not None


@dataclass(frozen=True)
class Study:
    """A planned study: its variants (swept ones in grid order, then `baseline` when some model has no swept variant
    equal to the run's setting), models, benchmarks, and where each output of each variant comes from."""

    name: str
    section: str
    kind: str
    description: str
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    family: str | None  # the swept family (kind "metric")
    runs: int
    variants: dict[str, Variant]  # every variant, `baseline` included
    main: Plan
    results_dir: str
    examples: tuple[Example, ...] = ()
    review: dict[str, int] = field(default_factory=dict)  # the blind review sheet of the rephrasings (rows, seed)
    # model -> its baseline's variant name (a swept variant whose every job is the run's, else `baseline`)
    baselines: dict[str, str] = field(default_factory=dict)
    # where each output of each variant comes from, found once (the rules' input functions ask many times over)
    _stages: dict = field(default_factory=dict, compare=False, repr=False)

    def _stage(self, key: tuple, find) -> Stage:
        if key not in self._stages:
            self._stages[key] = find()
        return self._stages[key]

    # --- which variants each model has, and where its files come from

    @property
    def swept(self) -> list[str]:
        return [name for name in self.variants if name != BASELINE]

    def variants_of(self, model: str) -> list[str]:
        """The variants of a model's rows: every swept variant, and `baseline` where none of them is its baseline."""
        return self.swept + ([BASELINE] if self.baselines[model] == BASELINE else [])

    def vpath(self, variant: str, run: int | None = None) -> str:
        """A variant's folder under the results folder (of one run, for a study with runs), as the rules' `vpath`
        wildcard names it: the run's own files are at vpath "" (careval.plan.Plan.at)."""
        folder = f"studies/{self.name}/{variant}/"
        return folder if run is None else f"{folder}run{run}/"

    def root(self, variant: str, run: int | None = None) -> str:
        """The folder of a variant's own files (of one run, for a study with runs)."""
        return f"{self.results_dir}/{self.vpath(variant, run)}".rstrip("/")

    def vpaths(self) -> dict[str, tuple[str, int]]:
        """Every folder of the study's own jobs -> (variant, run): a variant's, and for a study with runs (the
        resilience analysis) each run's below it."""
        out = {}
        for variant in self.variants:
            out[self.vpath(variant)] = (variant, 0)
            if self.kind == "analysis":
                out.update({self.vpath(variant, run): (variant, run) for run in self.runs_of()})
        return out

    def runs_of(self) -> range:
        return range(self.runs)

    def main_model(self, variant: str, model: str) -> str | None:
        """The run's model whose spec is the variant's model's (the same name but for section `models`), or None."""
        key = ("main_model", variant, model)
        if key not in self._stages:
            spec = repr(self.variants[variant].plan.models[model])
            self._stages[key] = next((name for name, main in self.main.models.items() if repr(main) == spec), None)
        return self._stages[key]

    def infer(self, variant: str, model: str, benchmark: str) -> Stage:
        return self._stage(("infer", variant, model, benchmark), lambda: self._infer(variant, model, benchmark))

    def _infer(self, variant: str, model: str, benchmark: str) -> Stage:
        plan, main = self.variants[variant].plan, self.main
        name = self.main_model(variant, model)
        same = name is not None and repr(plan.infer_job(model, benchmark)) == repr(main.infer_job(name, benchmark))
        return Stage(name if same else None)

    def scores(self, variant: str, model: str, benchmark: str, family: str) -> Stage:
        """A metric family's per-sample file of one model on one benchmark."""
        key = ("scores", variant, model, benchmark, family)
        return self._stage(key, lambda: self._scores(variant, model, benchmark, family))

    def _scores(self, variant: str, model: str, benchmark: str, family: str) -> Stage:
        plan, main = self.variants[variant].plan, self.main
        job = FAMILIES[family].job
        if family == "relaxed_perplexity":
            name = self.main_model(variant, model)
            same = (
                name is not None
                and family in main.families(benchmark)
                and repr(plan.relaxed_perplexity_job(model, benchmark))
                == repr(main.relaxed_perplexity_job(name, benchmark))
            )
            return Stage(name if same else None)
        answers = self.infer(variant, model, benchmark)
        if not answers.shared or family not in main.families(benchmark):
            return Stage(None)
        if family == "judge":
            same = _same_judging(plan, main)
        else:
            assert job in ("score", "extra"), family
            same = repr(plan.score_job(benchmark, [family])) == repr(main.score_job(benchmark, [family]))
        return Stage(answers.main if same else None)

    def rephrase(self, variant: str, run: int, model: str, benchmark: str, stage: str) -> Stage:
        """A rephrasing output of one run ("rephrase", "rephrase_scores" or "rephrase_judge")."""
        key = ("rephrase", variant, run, model, benchmark, stage)
        return self._stage(key, lambda: self._rephrase(variant, run, model, benchmark, stage))

    def _rephrase(self, variant: str, run: int, model: str, benchmark: str, stage: str) -> Stage:
        plan, main = self.variants[variant].plans[run], self.main
        same = (
            benchmark in main.analysis.resilience_benchmarks
            and model in main.models
            and repr(plan.rephrase_job()) == repr(main.rephrase_job())
        )
        if stage == "rephrase_scores":
            same = same and repr(plan.score_job(benchmark, plan.repeat_families())) == repr(
                main.score_job(benchmark, main.repeat_families())
            )
        elif stage == "rephrase_judge":
            same = same and main.repeats_judged(benchmark) and _same_judging(plan, main, repeats=True)
        return Stage(model if same else None)

    # --- the files

    def score_file(self, variant: str, model: str, benchmark: str, family: str) -> str:
        stage = self.scores(variant, model, benchmark, family)
        if stage.shared:
            return f"{self.results_dir}/scores/{stage.main}/{benchmark}/{family}.parquet"
        return f"{self.root(variant)}/scores/{model}/{benchmark}/{family}.parquet"

    def answers_file(self, variant: str, model: str, benchmark: str, kind: str) -> str:
        """The generations or log-likelihoods ("generations", "loglik") a variant's scoring reads."""
        stage = self.infer(variant, model, benchmark)
        if stage.shared:
            return f"{self.results_dir}/{kind}/{stage.main}/{benchmark}.parquet"
        return f"{self.root(variant)}/{kind}/{model}/{benchmark}.parquet"

    def rephrase_file(self, variant: str, run: int, model: str, benchmark: str, stage: str) -> str:
        if self.rephrase(variant, run, model, benchmark, stage).shared:
            return f"{self.results_dir}/{stage}/{model}/{benchmark}.parquet"
        return f"{self.root(variant, run)}/{stage}/{model}/{benchmark}.parquet"

    def families(self, variant: str, benchmark: str) -> list[str]:
        """The families of the study's rows on a benchmark: every family (kind model) or the swept one (metric)."""
        families = self.variants[variant].plan.families(benchmark)
        return families if self.kind == "model" else [f for f in families if f == self.family]

    def sources(self) -> list[StudySource]:
        """Every file of the study's sample table, labelled: the per-sample scores of each variant (or, kind
        analysis, each run's scored rephrasings and their grades), in variant, model, benchmark order."""
        out = []
        for model in self.models:
            for variant in self.variants_of(model):
                for benchmark in self.benchmarks:
                    task = self.main.benchmarks[benchmark].task
                    if self.kind == "analysis":
                        stages = ["rephrase_scores"] + (
                            ["rephrase_judge"] if self.variants[variant].plan.repeats_judged(benchmark) else []
                        )
                        for run in self.runs_of():
                            for stage in stages:
                                path = self.rephrase_file(variant, run, model, benchmark, stage)
                                out.append(StudySource(variant, model, benchmark, task, stage, run, path))
                        continue
                    for family in self.families(variant, benchmark):
                        path = self.score_file(variant, model, benchmark, family)
                        out.append(StudySource(variant, model, benchmark, task, family, 0, path))
        return out

    def own_jobs(self) -> list[tuple[str, str, str, int]]:
        """(variant, model, benchmark, run) of every study-own model job (inference, rephrasing): for the tests and
        the planned-job counts."""
        jobs = []
        for model in self.models:
            for variant in self.variants_of(model):
                for benchmark in self.benchmarks:
                    if self.kind == "analysis":
                        jobs += [
                            (variant, model, benchmark, run)
                            for run in self.runs_of()
                            if not self.rephrase(variant, run, model, benchmark, "rephrase").shared
                        ]
                    elif self.kind == "model" and not self.infer(variant, model, benchmark).shared:
                        jobs.append((variant, model, benchmark, 0))
        return jobs

    def examples_files(self) -> list[tuple[str, str, str]]:
        """(variant, model, file) of every Relaxed Perplexity examples job (paper Table 6), column order."""
        return [
            (variant, model, f"{self.root(variant)}/relaxed_perplexity_examples/{model}.parquet")
            for model in self.models
            for variant in ([self.baselines[model]] + [v for v in self.swept if v != self.baselines[model]])
        ]

    # --- the specs of the study's own analysis jobs

    def review_inputs(self) -> tuple[list[str], RephrasingReviewJob]:
        """The blind review sheet of a study of the resilience analysis: its inputs (every variant's first-run
        rephrasings, then the answers rephrased) and its spec."""
        sources = [(v, m, b) for v in self.swept for m in self.models for b in self.benchmarks]
        answers = [(m, b) for m in self.models for b in self.benchmarks]
        paths = [self.rephrase_file(v, 0, m, b, "rephrase") for v, m, b in sources]
        paths += [f"{self.results_dir}/generations/{m}/{b}.parquet" for m, b in answers]
        job = RephrasingReviewJob(
            variants=tuple(self.swept),
            sources=tuple(ReviewSource(*source) for source in sources),
            answers=tuple(answers),
            rows=self.review["rows"],
            seed=self.review["seed"],
        )
        return paths, job

    @property
    def has_review_sheet(self) -> bool:
        return self.kind == "analysis" and bool(self.review.get("rows"))

    def table_job(self) -> StudyTableJob:
        labels = (SourceLabel(s.variant, s.model, s.benchmark, s.task, s.family, s.run) for s in self.sources())
        return StudyTableJob(study=self.name, kind=self.kind, sources=tuple(labels))

    def page(self) -> StudyPage:
        return StudyPage(
            name=self.name,
            description=self.description,
            section=self.section,
            kind=self.kind,
            variants=tuple(self.swept),
            baselines=dict(self.baselines),
            labels={model: self.main.models[model].label for model in self.models},
        )

    def summary(self) -> StudySummary:
        return StudySummary(name=self.name, variants=tuple(self.swept), baselines=dict(self.baselines), kind=self.kind)

    def examples_job(self, variant: str, model: str) -> ExamplesJob:
        """One model's Relaxed Perplexity on the study's example questions (paper Table 6), under a variant."""
        plan = self.variants[variant].plan
        options = dict(plan.family_options("relaxed_perplexity").options)
        options.pop("limit", None)
        benchmarks = sorted({e.benchmark for e in self.examples})
        return ExamplesJob(
            key=f"studies.{self.name}.examples",
            model=plan.models[model],
            examples=self.examples,
            datasets=tuple(replace(plan.normalise_job(b), limit=None) for b in benchmarks),
            prompts={b: plan.benchmarks[b].prompt for b in benchmarks},
            options=options,
        )

    def table6_job(self) -> Table6Job:
        """Table 6's columns: each model of the study under each variant (its baseline first), by the model's label
        (a variant of another section than `models` adds its name)."""
        labels = []
        for variant, model, _ in self.examples_files():
            label = self.variants[variant].plan.models[model].label
            own = self.section == "models" or variant == self.baselines[model]
            labels.append(label if own else f"{label} [{variant}]")
        return Table6Job(labels=tuple(labels))


@dataclass(frozen=True)
class StudySource:
    """One input of a study's sample table: whose file it is (variant, model, benchmark, run) and what it holds (a
    metric family's scores, or kind analysis: "rephrase_scores" / "rephrase_judge")."""

    variant: str
    model: str
    benchmark: str
    task: str
    family: str
    run: int
    path: str


def _same_judging(plan: Plan, main: Plan, repeats: bool = False) -> bool:
    """The same judge (or jury: the same judges, each grading alike, combined alike) in the two plans."""
    if (plan.judge is None) or (main.judge is None):
        return plan.judge is None and main.judge is None
    return repr(_judging(plan, repeats)) == repr(_judging(main, repeats))


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
        variant: Variant(variant, _plans(key, variant, section, values, base, main, models, given, runs, schema))
        for variant, values in _grid(f"{key}.sweep.{section}", section, sweep)
    }
    baseline = Variant(BASELINE, _plans(key, BASELINE, section, (), base, main, models, given, runs, schema))
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


def _value_name(key: str, value: Any, position: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and _WORD.match(value):
        return value
    raise ConfigError(
        f"{key}: value {position + 1} ({str(value)[:40]!r}) is not a short word that can name its variant; "
        "give the values as a mapping name -> value"
    )


def _named_values(key: str, values: Any) -> list[tuple[str, Any]]:
    if isinstance(values, list):
        named = [(_value_name(key, value, i), value) for i, value in enumerate(values)]
        names = [n for n, _ in named]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"{key}: the values {', '.join(twice)} are listed twice")
        return named
    if isinstance(values, dict):
        return sorted(values.items(), key=lambda item: item[0])
    raise ConfigError(f"{key}: give the values as a list or as a mapping name -> value, not {type(values).__name__}")


def _grid(key: str, section: str, sweep: Any) -> list[tuple[str, tuple[tuple[str, Any], ...]]]:
    """Every variant of the sweep: (name, ((setting, value), ...)), the grid of the settings (by name) over their
    values (a list's in its order, a mapping's by name).
    Section `models` has one setting, `model`, whose values are the other models."""
    if section == "models":
        if isinstance(sweep, dict) and any(isinstance(v, list) for v in sweep.values()):
            raise ConfigError(f"{key}: give the other models as a list of names or a mapping variant -> model")
        return [(f"model={n}", (("model", (n, v)),)) for n, v in _named_values(key, sweep)]
    if not isinstance(sweep, dict):
        raise ConfigError(f"{key}: give the settings as a mapping setting -> values")
    axes = [
        [(setting, n, v) for n, v in _named_values(f"{key}.{setting}", values)]
        for setting, values in sorted(sweep.items())
    ]
    return [
        (",".join(f"{setting}={n}" for setting, n, _ in combination), tuple((s, v) for s, _, v in combination))
        for combination in itertools.product(*axes)
    ]


def _check_setting(key: str, section: str, setting: str) -> None:
    allowed = study_kind(section).settings
    if setting.split(".", 1)[0] not in allowed:
        raise ConfigError(
            f"{key}.sweep.{section}.{setting}: not a setting a study of {section} sweeps (these change a value: "
            f"{', '.join(allowed) or 'none'})"
        )


def _set(node: dict, setting: str, value: Any) -> None:
    """Set a setting (dotted: sampling.temperature) inside a config section, making the sections on the way."""
    *parents, last = setting.split(".")
    for part in parents:
        node[part] = dict(node.get(part) or {})
        node = node[part]
    node[last] = copy.deepcopy(value)


def _section(config: dict, section: str) -> dict:
    """A config section (metrics.relaxed_perplexity, analysis.resilience, generation), made where unset."""
    node = config
    for part in section.split("."):
        node[part] = dict(node.get(part) or {})
        node = node[part]
    return node


def _variant_config(key, section, values, base, models, benchmarks) -> tuple[dict, dict[str, dict]]:
    """The run's config with a variant's settings applied, and the entries of the models of this study only."""
    config = copy.deepcopy(base)
    if section == "models" and values:
        ((_, (label, other)),) = values
        if isinstance(other, str):
            return config, {}
        config["models"][label] = copy.deepcopy(other)
        return config, {label: other}
    for setting, value in values:
        _check_setting(key, section, setting)
        target = study_kind(section).target
        if target == "models":
            targets = [config["models"][model] for model in models]
        elif target == "benchmarks":
            targets = [config["benchmarks"][benchmark] for benchmark in benchmarks]
        else:
            targets = [_section(config, section)]
        for target in targets:
            _set(target, setting, value)
    return config, {}  # (the baseline: no settings)


def _plans(key, variant, section, values, base, main, models, benchmarks, runs, schema) -> tuple:
    """The variant's plan of each run: the run's config with its settings, planned by the run's own code (so its
    defaults and checks are the run's). Run r > 0 rephrases with the variant's seed + r."""
    if section == "models" and values:
        ((_, (label, other)),) = values
        if isinstance(other, str) and other not in main.models:
            raise ConfigError(
                f"{key}.sweep.models: '{other}' is not a key of `models` (a model of this study only is a mapping "
                "variant -> model entry)"
            )
        if not isinstance(other, str) and label in main.models:
            raise ConfigError(f"{key}.sweep.models.{label}: `models` has a model of this name already")
    config, own = _variant_config(key, section, values, base, models, benchmarks)
    try:
        plans = [build_run_plan(config, schema) if values else main]
        for run in range(1, runs):
            seed = plans[0].rephrase_job().sampling.seed + run
            run_config = copy.deepcopy(config)
            _set(_section(run_config, "analysis.resilience"), "sampling.seed", seed)
            plans.append(build_run_plan(run_config, schema))
    except ConfigError as error:
        raise ConfigError(f"{key}: variant {variant}: {error}") from None
    if section not in ("model", "models") or not values:
        return tuple(plans)
    # only the evaluated models change: the same entry may also be the judge or the rephraser, which keep theirs
    if section == "model":
        new = {model: plans[0].models[model] for model in models}
    else:
        ((_, (label, other)),) = values
        spec = main.models[other] if isinstance(other, str) else plans[0].models[label]
        new = dict.fromkeys(models, spec)
    return (replace(main, models={**main.models, **new}, entries={**main.entries, **own}),)


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
                    out.append(repr(_judging(plan, repeats=True)))
                continue
            out.append(repr(plan.infer_job(model, b)))
            for family in study.families(variant, b):
                if family == "relaxed_perplexity":
                    out.append(repr(plan.relaxed_perplexity_job(model, b)))
                elif family == "judge":
                    out.append(repr(_judging(plan)))
                else:
                    out.append(repr(plan.score_job(b, [family])))
    return tuple(out)


def _judging(plan: Plan, repeats: bool = False) -> tuple:
    """The judge's job spec, or a jury's: every judge's and how they combine."""
    if plan.judges:
        return (plan.jury_job(), *(plan.judge_job(repeats, judge) for judge in plan.judges))
    return (plan.judge_job(repeats),)


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
