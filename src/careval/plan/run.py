"""The run's plan (:class:`Plan`): what a validated config asks for, as typed specs (models, benchmarks, metric
families, analyses), and the files and job specs every rule file reads.

The plan's last step is one frozen spec per job (careval.specs; the `*_job` methods of :class:`Plan`): exactly
the settings that job reads, which its rule passes as `params: job=...` and nothing else of the config.
A config becomes a Plan in careval.plan.build_run (the run) and careval.plan.studies (each study variant's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from careval.analysis.cost import CostJob
from careval.analysis.plan import AnalysisPlan
from careval.analysis.statistics.comparisons import ComparisonsJob
from careval.careqa.llm import llm_sampling
from careval.careqa.statistics import CareqaStatisticsJob
from careval.datasets.benchmark import Benchmark
from careval.inference import sampling_for
from careval.jobs.repeats import repeat_sampling
from careval.metrics.registry import FAMILIES, TASK_FAMILIES
from careval.models.spec import ModelSpec, cache_dir
from careval.plan.families import LM_EVAL_SCORING, scored_families, task_families
from careval.specs import (
    DATA_KEYS,
    PROMPT_KEYS,
    AggregateJob,
    CareqaLLMJob,
    ConsistencyJob,
    EditionsJob,
    EngineJob,
    FamilyJob,
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

__all__ = ["Plan", "job_prices"]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def built_once(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """A job-spec method of :class:`Plan` whose spec is built once per plan and arguments, then handed out again: the
    rules' params and input functions and the studies' comparisons ask for the same spec many times over, and a spec,
    being frozen, writes its identity (careval.canonical) once."""

    @functools.wraps(method)
    def once(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        plan, *rest = args
        key = (method.__name__, *(tuple(a) if isinstance(a, list) else a for a in rest), *sorted(kwargs.items()))
        built = plan._specs  # type: ignore[attr-defined]
        if key not in built:
            built[key] = method(*args, **kwargs)
        return built[key]

    return once


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
    # config `studies:` (careval.plan.study.Study, which imports this module): each study's variants, each a plan
    studies: dict[str, Any] = field(default_factory=dict)
    # the models of a study only (careval.plan.studies, section `models`): name -> spec
    study_models: dict[str, ModelSpec] = field(default_factory=dict)
    # settings that cannot take effect under this config, one line each naming the key (also the report's notes)
    warnings: tuple[str, ...] = ()
    # every study variant's folder under results/ (the rules' `vpath` wildcard, careval.plan.study.Study.vpath) ->
    # (study, variant, run) and its plan: the run's own rules run a variant's jobs under the variant's plan
    variant_of: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    variant_plans: dict[str, Plan] = field(default_factory=dict)
    # the job specs built so far (built_once); not an argument, so a plan made by replace() starts with none
    _specs: dict = field(default_factory=dict, init=False, compare=False, repr=False)

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

    @built_once
    def prepare_job(self, name: str) -> PrepareJob:
        entry = self.entries[name]
        return PrepareJob(
            name=name,
            weights=self.loaded_model(name).weights,
            entry={key: entry[key] for key in ("source", "gguf", "sha256") if key in entry},
            folder=f"{self.models_dir}/{name}",
            cache=f"{self.models_dir}/.cache",
        )

    @built_once
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

    @built_once
    def infer_job(self, model: str, benchmark: str) -> InferJob:
        entry = self.benchmarks[benchmark]
        sampling = sampling_for(entry, self.config["generation"]) if entry.generates else None
        return self._model_job(
            InferJob, model, benchmark, sampling=sampling, request_batch=self.config["request_batch"]
        )

    @built_once
    def relaxed_perplexity_job(self, model: str, benchmark: str) -> RelaxedPerplexityJob:
        return self._model_job(
            RelaxedPerplexityJob, model, benchmark, options=self.family_options("relaxed_perplexity").options
        )

    @built_once
    def family_job(self, model: str, benchmark: str, family: str) -> FamilyJob:
        """An LLM-run family computed by its registry entry's runner (rule llm_family)."""
        return self._model_job(FamilyJob, model, benchmark, family=family, options=self.family_options(family).options)

    def scored_families(self) -> set[str]:
        """Every family the run or one of its studies' variants scores on some benchmark."""
        plans = (self, *self.variant_plans.values())
        return {family for plan in plans for benchmark in plan.benchmarks for family in plan.families(benchmark)}

    def one_family_scoring(self) -> list[str]:
        """The families the rule score_family scores one at a time: an entry's extra ones, and any under a variant;
        only those scored here, so that a family's file no job of this config makes (a skipped one) is stale."""
        return sorted(family for family in self.scored_families() if FAMILIES[family].job in ("score", "extra"))

    def extra_scoring(self) -> dict[str, list[str]]:
        """The run's own families the rule score_family scores, by benchmark: its entry's extra ones (its task's
        scoring job writes the others)."""
        extras = {
            benchmark: [
                family
                for family in self.families(benchmark)
                if family not in task_families(entry) and FAMILIES[family].job in ("score", "extra")
            ]
            for benchmark, entry in self.benchmarks.items()
        }
        return {benchmark: families for benchmark, families in extras.items() if families}

    def runner_families(self) -> list[str]:
        """The LLM-run families their registry entries' runners compute (rule llm_family), scored here."""
        return sorted(family for family in self.scored_families() if FAMILIES[family].runner is not None)

    def family_jobs(self, model: str, benchmark: str, family: str) -> tuple:
        """The specs of the jobs behind one family's file of a model on a benchmark, what a study compares: the
        judge's (a jury's: every judge's and the jury's), Relaxed Perplexity's or a runner family's own LLM job, or
        the family's scoring job (careval.plan.study)."""
        if family == "judge":
            return self.judging()
        if family == "relaxed_perplexity":
            return (self.relaxed_perplexity_job(model, benchmark),)
        if FAMILIES[family].runner is not None:
            return (self.family_job(model, benchmark, family),)
        return (self.score_job(benchmark, [family]),)

    @built_once
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

    @built_once
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

    @built_once
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

    @built_once
    def score_job(self, benchmark: str, families: list[str]) -> ScoreJob:
        return ScoreJob(
            families=tuple(self.family_options(family) for family in families),
            min_chars=self.benchmarks[benchmark].min_chars,
        )

    @built_once
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

    def judging(self, repeats: bool = False) -> tuple:
        """The judge's job spec, or a jury's: every judge's and how they combine."""
        if self.judges:
            return (self.jury_job(), *(self.judge_job(repeats, judge) for judge in self.judges))
        return (self.judge_job(repeats),)

    @built_once
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
        model_kinds += ("llm_family",) if self.runner_families() else ()  # a plugin's LLM-run families (llm_family)
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
