"""One config -> one plan: validate against the schema, fill the schema's defaults, cross-check every name,
and build the typed specs every rule file reads (models, benchmarks, metric families, analyses).

The plan's last step is one frozen spec per job (careval.specs; the `*_job` methods of :class:`Plan`): exactly
the settings that job reads, which its rule passes as `params: job=...` and nothing else of the config.

The Snakefile calls :func:`careval.plan.build_plan` once; every config error is a one-line :class:`ConfigError`
raised here, before any job. A family a config skips (``metrics.skip``) or never reaches (no
benchmark for it) never needs its section: ``metrics.skip: [judge]`` without ``metrics.judge`` plans.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from careval.analysis.aggregate import MCQA_AVERAGE, MCQA_AVERAGE_METRICS
from careval.analysis.cost import CostJob, cost_quality_warnings
from careval.analysis.elo import EloFileError, check_elo
from careval.analysis.plan import AnalysisConfigError, AnalysisPlan, analysis_plan
from careval.analysis.statistics.comparisons import ComparisonsJob
from careval.analysis.tables.paper_tables import PAPER_TASKS, planned_tables, unfilled_tables
from careval.backends.base import missing as missing_capability
from careval.backends.registry import spec_capabilities
from careval.careqa.llm import llm_sampling
from careval.careqa.statistics import CareqaStatisticsJob
from careval.config import ConfigError, prepare_config, schema_part
from careval.datasets.benchmark import Benchmark
from careval.datasets.definition import BenchmarkDefinitionError
from careval.datasets.loaders import SourceError
from careval.datasets.normalise import check_fields_in_source
from careval.datasets.registry import REGISTRY, get_benchmark
from careval.inference import sampling_for
from careval.inputs import resolve_input
from careval.jobs.repeats import repeat_sampling
from careval.metrics.registry import FAMILIES, JUDGE_EXPECTED_SUFFIX, JUDGE_PREFIX, TASK_FAMILIES
from careval.models.prepare import check_local_folder
from careval.models.source import ModelSourceError
from careval.models.spec import ModelSpec, cache_dir, endpoint_spec, model_spec
from careval.specs import (
    DATA_KEYS,
    PROMPT_KEYS,
    AggregateJob,
    CareqaLLMJob,
    ConsistencyJob,
    EditionsJob,
    EngineJob,
    FamilyOptions,
    InferJob,
    JudgeJob,
    JuryJob,
    JuryReportJob,
    NormaliseJob,
    PrepareJob,
    RelaxedPerplexityJob,
    RephraseJob,
    ReviewJob,
    ScoreJob,
)

__all__ = ["ConfigError", "Plan", "build_run_plan"]

# The families computed by a job that loads an LLM, each by its own rule (the judge, Relaxed Perplexity).
LLM_FAMILIES = tuple(name for name, family in FAMILIES.items() if family.job == "llm")
# Families only some benchmarks carry (an entry's extra_metrics), each by its own rule (F1-RadGraph).
EXTRA_FAMILIES = tuple(name for name, family in FAMILIES.items() if family.job == "extra")


# The scoring jobs of lm-eval tasks (rules score_lm_eval, score_lm_eval_open): lm-eval's own metrics, and on a task
# that generates, careval's families of open-ended answers too.
LM_EVAL_SCORING = {"lm_eval": ("lm_eval",), "lm_eval_open": ("lm_eval", *TASK_FAMILIES["open"])}


def benchmark_families(entry: Benchmark) -> tuple[str, ...]:
    """Every family a benchmark can be scored with: its task's (an lm-eval task: LM_EVAL_SCORING) and its extra ones."""
    if entry.lm_eval is not None:
        return LM_EVAL_SCORING["lm_eval_open" if entry.generates else "lm_eval"] + entry.extra_metrics
    return TASK_FAMILIES[entry.task] + entry.extra_metrics


def scored_families(
    entry: Benchmark, benchmark: str, skipped: frozenset[str], only: dict[str, tuple[str, ...] | None]
) -> list[str]:
    """The families a benchmark is scored with: its own, less those skipped (metrics.skip) and the LLM families
    limited to other benchmarks (metrics.<family>.benchmarks, `only`)."""
    return [
        family
        for family in benchmark_families(entry)
        if family not in skipped and ((allowed := only.get(family)) is None or benchmark in allowed)
    ]


@dataclass(frozen=True)
class Plan:
    """What a validated config asks for. `config` is the config with every schema default filled in."""

    config: dict
    models: dict[str, ModelSpec]  # the evaluated models
    benchmarks: dict[str, Benchmark]
    limits: dict[str, int | None]
    skipped_families: frozenset[str]
    # an LLM family limited to some benchmarks (metrics.<family>.benchmarks); None: every open-ended one
    family_benchmarks: dict[str, tuple[str, ...] | None]
    analysis: AnalysisPlan
    judge: ModelSpec | None = None  # None when no benchmark is judged under this config; a jury's first judge
    # metrics.judge.models: the jury, by name (careval.metrics.jury); {} under a single `model:` (today's judge)
    judges: dict[str, ModelSpec] = field(default_factory=dict)
    rephraser: ModelSpec | None = None  # the resilience analysis' rephrasing LLM
    careqa_llms: dict[str, ModelSpec] = field(default_factory=dict)  # translator, rephraser
    # the config entry of every model a job loads, evaluated or inline (what prepare_model builds from)
    entries: dict[str, dict] = field(default_factory=dict)
    # the Elo CSV's names that match no configured model, or configured models without an Elo (one line)
    elo_warning: str | None = None
    # config `studies:` (careval.plan.studies.Study, which imports this module): each study's variants, each a plan
    studies: dict[str, Any] = field(default_factory=dict)
    # the models of a study only (careval.plan.studies, section `models`): name -> spec
    study_models: dict[str, ModelSpec] = field(default_factory=dict)
    # settings that cannot take effect under this config, one line each naming the key (also the report's notes)
    warnings: tuple[str, ...] = ()
    # every study variant's folder under results/ (the rules' `vpath` wildcard, careval.plan.studies.Study.vpath) ->
    # (study, variant, run) and its plan: the run's own rules run a variant's jobs under the variant's plan
    variant_of: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    variant_plans: dict[str, Plan] = field(default_factory=dict)

    def at(self, vpath: str) -> Plan:
        """The plan of the jobs under a variant's folder (`vpath`, e.g. "studies/chat/chat_template=true/"); the
        run's own under "" (a job whose file is the run's is the run's job: the studies never ask for it)."""
        return self.variant_plans[vpath] if vpath else self

    def answers_file(self, vpath: str, model: str, benchmark: str, kind: str) -> str:
        """The generations or log-likelihoods ("generations", "loglik") the jobs under `vpath` read: the variant's
        own, or the run's where the variant's inference is the run's."""
        if not vpath:
            return f"{self.results_dir}/{kind}/{model}/{benchmark}.parquet"
        study, variant, _ = self.variant_of[vpath]
        return self.studies[study].answers_file(variant, model, benchmark, kind)

    def repeats_file(self, vpath: str, kind: str, model: str, benchmark: str) -> str:
        """The rephrasings ("rephrase") or sampled answers ("consistency") the jobs under `vpath` read: the run's,
        or a variant run's own rephrasings."""
        if not vpath:
            return f"{self.results_dir}/{kind}/{model}/{benchmark}.parquet"
        study, variant, run = self.variant_of[vpath]
        return self.studies[study].rephrase_file(variant, run, model, benchmark, kind)

    @property
    def results_dir(self) -> str:
        return self.config["results_dir"]

    @property
    def models_dir(self) -> str:
        return self.config["models_dir"]

    @property
    def datasets_dir(self) -> str:
        return self.config["datasets_dir"]

    def benchmarks_where(self, keep) -> list[str]:
        return [name for name, entry in self.benchmarks.items() if keep(entry)]

    @property
    def open_benchmarks(self) -> list[str]:
        return self.benchmarks_where(lambda entry: entry.task == "open")

    def families(self, benchmark: str) -> list[str]:
        """The metric families `benchmark` is scored with under this config."""
        return scored_families(self.benchmarks[benchmark], benchmark, self.skipped_families, self.family_benchmarks)

    def score_job_families(self, task: str) -> list[str]:
        """The families the scoring job of a task writes (LLM-based and per-entry ones have their own rules); the
        scoring jobs of lm-eval tasks: LM_EVAL_SCORING."""
        families = LM_EVAL_SCORING[task] if task in LM_EVAL_SCORING else TASK_FAMILIES[task]
        return [
            family for family in families if FAMILIES[family].job == "score" and family not in self.skipped_families
        ]

    def repeats_judged(self, benchmark: str) -> bool:
        """Whether the judge grades this benchmark's repeats too: wherever it grades its answers (paper 3.4-3.5)."""
        return self.judge is not None and "judge" in self.families(benchmark)

    def repeat_families(self) -> list[str]:
        """The open-ended families recomputed on every rephrasing and sampled answer, by the repeats' scoring job."""
        return [family for family in self.score_job_families("open") if FAMILIES[family].repeats]

    def score_files(self) -> list[str]:
        return [
            f"{self.results_dir}/scores/{model}/{benchmark}/{family}.parquet"
            for model in self.models
            for benchmark in self.benchmarks
            for family in self.families(benchmark)
        ]

    # --- one spec per job (careval.specs): what each rule passes as `params: job=...`, and all its job reads

    def prepare_job(self, name: str) -> PrepareJob:
        entry = self.entries[name]
        return PrepareJob(
            name=name,
            weights=self.loaded_model(name).weights,
            entry={key: entry[key] for key in ("source", "gguf", "sha256") if key in entry},
            folder=f"{self.models_dir}/{name}",
            cache=f"{self.models_dir}/.cache",
        )

    def normalise_job(self, benchmark: str) -> NormaliseJob:
        entry = self.benchmarks[benchmark]
        return NormaliseJob(benchmark=benchmark, data=entry.facts(DATA_KEYS), limit=self.limits[benchmark], entry=entry)

    def _model_job(self, kind: type, model: str, benchmark: str, **settings) -> Any:
        return kind(
            model=self.models[model],
            benchmark=benchmark,
            prompting=self.benchmarks[benchmark].facts(PROMPT_KEYS),
            entry=self.benchmarks[benchmark],
            **settings,
        )

    def infer_job(self, model: str, benchmark: str) -> InferJob:
        entry = self.benchmarks[benchmark]
        sampling = sampling_for(entry, self.config["generation"]) if entry.generates else None
        return self._model_job(
            InferJob, model, benchmark, sampling=sampling, request_batch=self.config["request_batch"]
        )

    def relaxed_perplexity_job(self, model: str, benchmark: str) -> RelaxedPerplexityJob:
        return self._model_job(
            RelaxedPerplexityJob, model, benchmark, options=self.family_options("relaxed_perplexity").options
        )

    def consistency_job(self, model: str, benchmark: str) -> ConsistencyJob:
        settings = self.config["analysis"]["consistency"]
        return self._model_job(
            ConsistencyJob,
            model,
            benchmark,
            r=settings["r"],
            limit=settings["limit"],
            sampling=repeat_sampling(self.config["generation"], settings["sampling"], self.benchmarks[benchmark]),
            request_batch=self.config["request_batch"],
        )

    def rephrase_job(self) -> RephraseJob:
        settings = self.config["analysis"]["resilience"]
        assert self.rephraser is not None, "no rephrasing under this config"
        return RephraseJob(
            rephraser=self.rephraser,
            k=settings["k"],
            limit=settings["limit"],
            sampling=repeat_sampling(self.config["generation"], settings["sampling"]),
            request_batch=self.config["request_batch"],
        )

    def family_options(self, family: str) -> FamilyOptions:
        """A family's `metrics.<family>` settings (schema defaults filled), split by the registry into the
        options that change a value and the execution ones."""
        settings = self.config["metrics"].get(family) or {}
        registered = FAMILIES[family]
        return FamilyOptions(
            name=family,
            options=registered.value_options(settings),
            execution={key: value for key, value in settings.items() if key in registered.execution_options},
        )

    def score_job(self, benchmark: str, families: list[str]) -> ScoreJob:
        return ScoreJob(
            families=tuple(self.family_options(family) for family in families),
            min_chars=self.benchmarks[benchmark].min_chars,
        )

    def judge_job(self, repeats: bool = False, judge: str | None = None) -> JudgeJob:
        """The judge's spec (a jury's `judge`'s); its repeats' jobs are bound by repeats_limit (or limit)."""
        assert self.judge is not None, "no benchmark is judged under this config"
        options = dict(self.family_options("judge").options)
        repeats_limit = options.pop("repeats_limit")
        if repeats and repeats_limit:
            options["limit"] = repeats_limit
        return JudgeJob(
            judge=self.judge if judge is None else self.judges[judge],
            options=options,
            request_batch=self.config["request_batch"],
        )

    def jury_job(self) -> JuryJob:
        """The jury's combining job: which judges, in order, and how their grades make the jury's."""
        return JuryJob(judges=tuple(self.judges), aggregate=self.config["metrics"]["judge"]["aggregate"])

    def jury_report_job(self) -> JuryReportJob:
        """The jury's analyses: each judge's own models (itself where it is evaluated, and its same_family)."""
        settings = self.config["metrics"].get("judge") or {}
        family = settings.get("same_family") or {}
        own = {
            judge: tuple(dict.fromkeys(([judge] if judge in self.models else []) + list(family.get(judge, []))))
            for judge in self.judges
        }
        return JuryReportJob(
            judges=tuple(self.judges),
            own_models={judge: models for judge, models in own.items() if models},
            length_bias_flag=settings.get("length_bias_flag"),
            one_grade_flag=settings.get("one_grade_flag"),
            # by name: the order of the `models` mapping is no setting
            models=tuple(sorted(self.models)),
            rating_range=tuple(self.config["analysis"]["human_rating_range"]),
            bootstrap=self.analysis.bootstrap,
        )

    def aggregate_job(self) -> AggregateJob:
        mcqa_average = self.analysis.mcqa_average
        return AggregateJob(
            tasks={name: entry.task for name, entry in self.benchmarks.items()},
            mcqa_average=None if mcqa_average is None else tuple(mcqa_average),
        )

    def comparisons_job(self) -> ComparisonsJob:
        """analysis.comparisons over every model set of analysis.model_sets and `all` (every evaluated model)."""
        settings = self.config["analysis"]["comparisons"]
        sets = {name: tuple(members) for name, members in self.config["analysis"]["model_sets"].items()}
        sets["all"] = tuple(sorted(self.models))
        keys = ("resamples", "permutations", "exact_limit", "confidence", "alpha", "power", "seed", "two_level")
        corpus_bleu = {b: self.benchmarks[b].min_chars for b in sorted(self.benchmarks) if "bleu" in self.families(b)}
        return ComparisonsJob(model_sets=sets, corpus_bleu=corpus_bleu, **{key: settings[key] for key in keys})

    def cost_job(self) -> CostJob:
        """Each job kind's GPUs per model (the folders of results/benchmarks): the evaluated model's, the judge's on
        the judge's jobs and the rephraser's on the rephrasings."""
        own = {name: spec.gpus for name, spec in self.models.items()}
        model_kinds = ("infer_open", "infer_closed", "relaxed_perplexity", "sample_consistency")
        gpus: dict[str, dict[str, int]] = dict.fromkeys(model_kinds, own)
        for kinds, spec in ((("judge", "judge_repeats"), self.judge), (("rephrase",), self.rephraser)):
            for kind in kinds:
                gpus[kind] = dict.fromkeys(self.models, 0 if spec is None else spec.gpus)
        resources = self.config["resources"]
        return CostJob(
            models=tuple(sorted(self.models)),
            benchmarks=tuple(sorted(self.benchmarks)),
            gpus=gpus,
            cache_dir=cache_dir(resources),
            prices=job_prices(self, model_kinds),
        )

    def engine_job(self, model: str, command: str) -> EngineJob:
        return EngineJob(model=self.models[model], command=command)

    def careqa_llm_job(self, step: str) -> CareqaLLMJob:
        """The CareQA translator's or rephraser's job: its model (or endpoint) and decoding."""
        return CareqaLLMJob(model=self.careqa_llms[step], sampling=llm_sampling(self.config["careqa"][step]))

    def careqa_editions_job(self, editions: list[dict] | None = None) -> EditionsJob:
        return EditionsJob(editions=tuple(self.config["careqa"]["editions"] if editions is None else editions))

    def careqa_review_job(self, *keys: str) -> ReviewJob:
        """careqa.review's keys a review job reads (the sheet: confidence, margin, seed; agreement: min_reviewers)."""
        return ReviewJob(review={key: self.config["careqa"]["review"][key] for key in keys})

    def careqa_statistics_job(self) -> CareqaStatisticsJob:
        """careqa_statistics (Table 4, figures 5-7): the tokenizer careqa.statistics.tokenizer names."""
        name = self.config["careqa"]["statistics"]["tokenizer"]
        return CareqaStatisticsJob(name, self.models[name].path, int(self.config["careqa"]["review"]["min_reviewers"]))

    def loaded_model(self, name: str) -> ModelSpec:
        """Any model a job loads: an evaluated one, the judge or the rephraser."""
        for spec in (
            *self.models.values(),
            self.judge,
            *self.judges.values(),
            self.rephraser,
            *self.careqa_llms.values(),
            *self.study_models.values(),
        ):
            if spec is not None and spec.name == name:
                return spec
        raise KeyError(name)


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
    _check_analysis_settings(config, raw_analysis, benchmarks, families, analysis.rubrics)
    anchor = analysis.relaxed_perplexity_anchor
    if anchor is not None and "relaxed_perplexity" not in families(anchor):
        raise ConfigError(
            f"analysis.relaxed_perplexity_anchor: '{anchor}' is not scored with Relaxed Perplexity "
            f"under this config (see metrics.relaxed_perplexity.benchmarks and metrics.skip)"
        )
    judged = any("judge" in families(b) for b in open_benchmarks) and bool(models)
    judge = _judge(config, models, spec_of) if judged else None
    judges = _jury(config, models, spec_of) if judged else {}
    judge = next(iter(judges.values()), judge)
    rephraser = _rephraser(config, models, spec_of) if analysis.resilience_benchmarks else None
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
    warnings = _ineffective_settings(config, judges, analysis, benchmarks)
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
        careqa_llms=_careqa_llms(config, models, resources),
        entries=entries,
        elo_warning=elo_warning,
        warnings=warnings,
    )
    _check_capabilities(plan)
    return plan


def job_prices(plan: Plan, model_kinds: tuple[str, ...]) -> dict[str, dict[str, list[float]]]:
    """The cost table's prices (careval.analysis.cost.CostJob.prices): each job kind's served model with a `price`."""

    def price(spec: ModelSpec | None) -> list[float] | None:
        given = (spec.endpoint or {}).get("price") if spec is not None else None
        return [float(given["input_per_mtok"]), float(given["output_per_mtok"])] if given else None

    prices: dict[str, dict[str, list[float]]] = {}
    for kind in model_kinds:
        prices[kind] = {name: p for name, spec in plan.models.items() if (p := price(spec)) is not None}
    for kinds, spec in ((("judge", "judge_repeats"), plan.judge), (("rephrase",), plan.rephraser)):
        for kind in kinds:
            if (p := price(spec)) is not None:
                prices[kind] = dict.fromkeys(plan.models, p)
    return {kind: by_model for kind, by_model in prices.items() if by_model}


def _check_capabilities(plan: Plan) -> None:
    """Every model's backend can do what its jobs will ask of it (its declared careval.backends.Capabilities):
    one line now, not an error mid-job. A judge without log-probabilities is allowed: it grades without a score
    distribution (careval.metrics.judge)."""
    specs = (*plan.models.values(), *plan.judges.values(), plan.judge, plan.rephraser)
    loaded = {spec.name: spec for spec in specs if spec is not None}
    loaded.update({f"careqa.{step}": spec for step, spec in plan.careqa_llms.items()})
    for name, spec in loaded.items():
        can = spec_capabilities(spec)  # a served model's: its API's (careval.backends.openai)
        key = name if name.startswith("careqa.") else f"models.{name}"
        runtime = (
            f"openai (the {spec.endpoint.get('api', 'chat')} API of {spec.path})" if spec.endpoint else spec.backend
        )
        if spec.chat_template and not can.chat_template:
            raise ConfigError(
                f"{key}.chat_template: {missing_capability(runtime, 'chat_template')} (the server applies its own)"
            )
        if can.max_gpus is not None and spec.gpus > can.max_gpus:
            raise ConfigError(
                f"{key}.gpus: backend {spec.backend} runs a model on at most {can.max_gpus} GPU(s), not {spec.gpus}"
            )
        if can.prompt_logprobs or name not in plan.models:
            continue
        for benchmark, entry in plan.benchmarks.items():
            needs = [
                family
                for family in plan.families(benchmark)
                if FAMILIES[family].logprobs and (FAMILIES[family].job == "llm" or entry.computes_logliks)
            ]
            # a generating benchmark's own log-likelihoods feed perplexity only (careval.inference skips them)
            needs += ["inference"] if entry.computes_logliks and not entry.generates and not needs else []
            needs += ["self-consistency"] if benchmark in plan.analysis.consistency_benchmarks else []
            if needs:
                raise ConfigError(f"{key}: {missing_capability(runtime, 'prompt_logprobs', needs[0])} (on {benchmark})")


def _check_analysis_settings(config: dict, raw_analysis: dict, benchmarks: dict, families, rubrics) -> None:
    """The analysis settings the schema cannot check alone: a rating range in order, and the cost page's
    benchmark and metric among what the run writes (a default the run cannot show is left to the page's note)."""
    low, high = config["analysis"]["human_rating_range"]
    if not low < high:
        raise ConfigError(
            f"analysis.human_rating_range: [{low:g}, {high:g}]: the lowest rating comes first, then the highest "
            "(e.g. [1, 5])"
        )
    cost = config["analysis"]["cost"]
    given = raw_analysis.get("cost") or {}
    benchmark, metric = cost["benchmark"], cost["metric"]
    if benchmark == MCQA_AVERAGE:
        members = [b for b in benchmarks if benchmarks[b].task == "mcqa"]
        have = list(MCQA_AVERAGE_METRICS) if members else []
    elif benchmark in benchmarks:
        have = _metric_names(benchmarks[benchmark], families(benchmark))
    else:
        if "benchmark" in given:
            raise ConfigError(
                f"analysis.cost.benchmark: '{benchmark}' is not a benchmark of this config (have: "
                f"{', '.join([*benchmarks, MCQA_AVERAGE])})"
            )
        return
    if (
        metric not in have
        and not _judged_metric(benchmark in benchmarks and "judge" in families(benchmark), rubrics, metric)
        and ("metric" in given or "benchmark" in given)
    ):
        raise ConfigError(
            f"analysis.cost.metric: '{metric}' is not a metric of {benchmark} under this config "
            f"(have: {', '.join(have) or 'none'})"
        )


def _metric_names(entry: Benchmark, families: list[str]) -> list[str]:
    """The fixed metric names a benchmark's families write (the judge's and F1-RadGraph's depend on the config; an
    lm-eval task's are those its task file names)."""
    lm_eval = entry.lm_eval
    own = list(lm_eval.metrics) if lm_eval is not None and "lm_eval" in families else []
    return own + [spec.name for family in families for spec in FAMILIES[family].metrics]


def _judged_metric(judged: bool, rubrics, metric: str) -> bool:
    """Whether `metric` is a judge_<rubric> (or its _expected) the judge writes on a benchmark it grades (`judged`)."""
    if not judged:
        return False
    return any(metric in (f"{JUDGE_PREFIX}{r}", f"{JUDGE_PREFIX}{r}{JUDGE_EXPECTED_SUFFIX}") for r in rubrics)


def _ineffective_settings(config: dict, judges: dict, analysis: AnalysisPlan, benchmarks: dict) -> tuple[str, ...]:
    """Settings that cannot take effect under this config: one warning line each, naming the key."""
    warnings = []
    if len(judges) == 1:
        warnings.append(
            "metrics.judge.models: a jury of one judge: the self-preference check needs two judges (a judge's grades "
            "of its own answers are compared with the other judges'), and there is no agreement between judges"
        )
    if config["analysis"]["comparisons"]["two_level"] and not analysis.consistency_benchmarks:
        warnings.append(
            "analysis.comparisons.two_level: true, but the run has no self-consistency samples to resample "
            "(analysis.consistency.r is 0, or no open-ended benchmark): the one-level paired bootstrap runs"
        )
    warnings += cost_quality_warnings(config, analysis.mcqa_average, benchmarks)
    return tuple(warnings)


def inline_model_name(entry: dict) -> str:
    """An inline entry (e.g. the paper's prometheus-7b-v2.0) is named after the last part of its source (a served
    one after its served model's id)."""
    if "endpoint" in entry:
        return entry["endpoint"]["model"].rstrip("/").rsplit("/", 1)[-1]
    return entry["source"].split(":", 1)[1].rstrip("/").rsplit("/", 1)[-1]


def _named_or_inline(value, models: dict[str, ModelSpec], key: str, spec_of) -> ModelSpec:
    """A model given by name (an entry of `models`, then also evaluated) or as an inline entry of its own."""
    if isinstance(value, dict):
        name = inline_model_name(value)
        longest = schema_part("models")["propertyNames"]["maxLength"]
        if len(name) > longest:  # its name, like a key of `models`, names folders and files
            raise ConfigError(
                f"{key}.source: the model's name '{name[:40]}...' ({len(name)} characters, the source's last part) "
                f"is longer than the {longest} characters a name may have (it names folders and files)"
            )
        return spec_of(name, value, key)
    if not value:
        raise ConfigError(f"{key} is not set (a name of `models` or a model entry)")
    if value not in models:
        raise ConfigError(f"{key}: '{value}' is not a key of `models` (have: {', '.join(models)})")
    return models[value]


def _judge(config: dict, models: dict[str, ModelSpec], spec_of) -> ModelSpec | None:
    judge = config["metrics"].get("judge")
    if not judge:
        raise ConfigError(
            "metrics.judge is not set, but the judge family is computed: set metrics.judge.model "
            "or add judge to metrics.skip"
        )
    if judge.get("models"):
        return None  # a jury (_jury)
    return _named_or_inline(judge.get("model"), models, "metrics.judge.model", spec_of)


def _jury(config: dict, models: dict[str, ModelSpec], spec_of) -> dict[str, ModelSpec]:
    """metrics.judge.models: each judge a name of `models` or an inline entry; {} under a single `model:`."""
    judge = config["metrics"]["judge"]
    jury: dict[str, ModelSpec] = {}
    for k, value in enumerate(judge.get("models") or []):
        spec = _named_or_inline(value, models, f"metrics.judge.models[{k}]", spec_of)
        if spec.name in jury:
            raise ConfigError(f"metrics.judge.models[{k}]: judge '{spec.name}' is listed twice")
        jury[spec.name] = spec
    unknown = {
        name: [m for m in members if m not in models]
        for name, members in (judge.get("same_family") or {}).items()
        if name not in jury or any(m not in models for m in members)
    }
    for name, missing in unknown.items():
        if name not in jury:
            raise ConfigError(f"metrics.judge.same_family: '{name}' is not a judge of metrics.judge.models")
        raise ConfigError(f"metrics.judge.same_family.{name}: {', '.join(missing)} is not a key of `models`")
    return jury


def _rephraser(config: dict, models: dict[str, ModelSpec], spec_of) -> ModelSpec:
    return _named_or_inline(
        config["analysis"]["resilience"]["rephraser"], models, "analysis.resilience.rephraser", spec_of
    )


def _careqa_llms(config: dict, models: dict[str, ModelSpec], resources: dict) -> dict[str, ModelSpec]:
    """The CareQA build's translator and rephraser: a name of `models` or an OpenAI-compatible endpoint."""
    specs = {}
    for step in ("translator", "rephraser"):
        settings = config["careqa"].get(step)
        if settings is None:
            continue
        key = f"careqa.{step}"
        if settings.get("endpoint"):
            specs[step] = endpoint_spec(
                f"{step}:{settings['endpoint']['model']}",
                settings["endpoint"],
                settings.get("system_prompt"),
                resources,
                key=f"{key}.endpoint",
            )
            continue
        name = settings["model"]
        if name not in models:
            raise ConfigError(f"{key}.model: '{name}' is not a key of `models` (have: {', '.join(models)})")
        spec = models[name]
        if settings.get("system_prompt"):
            spec = replace(spec, system_prompt=settings["system_prompt"])
        specs[step] = spec
    return specs
