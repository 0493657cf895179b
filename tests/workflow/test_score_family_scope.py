"""Which files the one-family scoring rule (score_family) may make: a study variant's, and of the run's own only an
entry's extra families (F1-RadGraph on MIMIC-III in the paper's plan). The run's task families are their task's
scoring job's alone, so Snakemake neither makes nor drops a score_family candidate for each of them (1,596 in the
paper's plan, a tenth of its planning time, when a ruleorder decided between the two)."""

from __future__ import annotations

from pathlib import Path

from workflow_runs import planned_dag

REPO = Path(__file__).resolve().parents[2]
MODEL = "gemma-2-9b-it"
EXTRA = f"results/scores/{MODEL}/mimic_iii_hospital_course/radgraph.parquet"


def test_score_family_makes_the_run_s_extra_families_and_the_variants_files_only(tmp_path):
    configfile = REPO / "config" / "paper.yaml"
    with planned_dag(REPO / "Snakefile", tmp_path, configfile, EXTRA, forceall=True) as workflow:
        score_family = workflow.get_rule("score_family")
        plan = workflow.globals["PLAN"]
        [job] = [job for job in workflow.dag.jobs if EXTRA in job.output]
        assert job.rule.name == "score_family"

        run_files = [
            f"results/scores/{MODEL}/{b}/{family}.parquet" for b in plan.benchmarks for family in plan.families(b)
        ]
        extras = {path for path in run_files if path.endswith("/radgraph.parquet")}
        assert extras == {EXTRA}
        assert {path for path in run_files if score_family.is_producer(path)} == extras

        # a variant's every family file is the rule's (whether a variant makes it or reads the run's is the plan's)
        vpath = next(vpath for vpath in plan.variant_of if vpath.startswith("studies/chat_template/"))
        variant = plan.at(vpath)
        for benchmark in variant.benchmarks:
            for family in variant.families(benchmark):
                path = f"results/{vpath}scores/{MODEL}/{benchmark}/{family}.parquet"
                assert score_family.is_producer(path) == (family in plan.one_family_scoring()), path
