"""A planned study (:class:`Study`): its variants, each a plan per run, and where each output of each variant comes
from: the run's file (a variant's job whose spec and inputs equal the run's) or the study's own, under
results/studies/<study>/<variant>/. With it, the specs of the study's own analysis jobs (its sample table, review
sheet and paper Table 6's examples)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from careval.analysis.studies.rephrasing_review import RephrasingReviewJob, ReviewSource
from careval.analysis.studies.tables import SourceLabel, StudyPage, StudySummary, StudyTableJob
from careval.analysis.tables.table6 import Table6Job
from careval.metrics.registry import FAMILIES
from careval.plan.run import Plan
from careval.specs import Example, ExamplesJob

BASELINE = "baseline"


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
        if family not in main.families(benchmark):
            return Stage(None)
        if FAMILIES[family].job == "llm" and family != "judge":  # the evaluated model's own job computes it
            name = self.main_model(variant, model)
        else:  # scored (or judged) from the model's answers: the run's file where its answers are the run's
            name = self.infer(variant, model, benchmark).main
        if family == "judge":
            same = _samejudging(plan, main)
        else:
            same = name is not None and repr(plan.family_jobs(model, benchmark, family)) == repr(
                main.family_jobs(name, benchmark, family)
            )
        return Stage(name if name is not None and same else None)

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
            same = same and main.repeats_judged(benchmark) and _samejudging(plan, main, repeats=True)
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


def _samejudging(plan: Plan, main: Plan, repeats: bool = False) -> bool:
    """The same judge (or jury: the same judges, each grading alike, combined alike) in the two plans."""
    if (plan.judge is None) or (main.judge is None):
        return plan.judge is None and main.judge is None
    return repr(plan.judging(repeats)) == repr(main.judging(repeats))
