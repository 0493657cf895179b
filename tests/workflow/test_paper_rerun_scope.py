"""On config/paper.yaml (21 models, 26 benchmarks): how many jobs a changed setting would replan, from the plan.

Snakemake's own DAG of the paper study is built twice (its Python API, as `snakemake -n` does), for the
config and for a copy with one setting changed; a job is replanned when its params (as Snakemake records
them) differ, and so is every job after it. `-s` prints the counts (the issue's table, on the paper's plan).
"""

from __future__ import annotations

import copy
from collections import deque
from pathlib import Path

import pytest
import yaml
from workflow_runs import job_kind, planned_dag

REPO = Path(__file__).resolve().parents[2]
TARGET = "results/correlations.pdf"


def _dag(config: dict, workdir: Path, repo: Path = REPO) -> dict[tuple, tuple[list[str], list[tuple]]]:
    """(rule, wildcards) -> (the params as Snakemake records them, the jobs that read its outputs), in the
    workflow of `repo` (another checkout: the same measurement on another version)."""
    workdir.mkdir(parents=True, exist_ok=True)
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    with planned_dag(repo / "Snakefile", workdir, configfile, TARGET, forceall=True, cores=64) as workflow:
        dag = workflow.dag

        def key(job) -> tuple:
            return job_kind(job.rule.name, dict(job.wildcards)), tuple(sorted(dict(job.wildcards).items()))

        return {
            key(job): (workflow.persistence._params(job), [key(after) for after in dag.depending[job]])
            for job in dag.jobs
        }


def _replanned(base: dict, changed: dict) -> set[tuple]:
    """The jobs whose params differ, or which are new, and every job after them."""
    queue = deque(job for job, (params, _) in changed.items() if job not in base or base[job][0] != params)
    seen = set(queue)
    while queue:
        for after in changed[queue.popleft()][1]:
            if after not in seen:
                seen.add(after)
                queue.append(after)
    return seen


def _set(config: dict, key: tuple[str, ...], value) -> dict:
    changed = copy.deepcopy(config)
    node = changed
    for part in key[:-1]:
        node = node.setdefault(part, {})
    node[key[-1]] = value
    return changed


def _sorted(node):
    return {key: _sorted(node[key]) for key in sorted(node)} if isinstance(node, dict) else node


@pytest.mark.slow
def test_on_the_paper_plan_a_setting_replans_only_its_jobs(tmp_path):
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    base = _dag(paper, tmp_path / "base")
    rules = {rule for rule, _ in base}
    cases = {
        "metrics.judge.retries 10 -> 11": (
            _set(paper, ("metrics", "judge", "retries"), 11),
            {"judge", "judge_repeats", "study_judge", "study_judge_repeats"},  # the studies' answers are judged too
        ),
        # a setting no study sweeps: every Relaxed Perplexity job reads it, the studies' (each variant inherits it)
        # and table 6's examples too (l, s or stride would also turn the grid's baseline into a variant of its own)
        "metrics.relaxed_perplexity.top_p 0.9 -> 0.95": (
            _set(paper, ("metrics", "relaxed_perplexity", "top_p"), 0.95),
            {"relaxed_perplexity", "study_relaxed_perplexity", "relaxed_perplexity_examples"},
        ),
        # a batch size changes no value: no job reads it but the manifest, which holds the whole resolved config
        "metrics.bertscore.batch_size -> 8": (_set(paper, ("metrics", "bertscore", "batch_size"), 8), set()),
        "the same config, keys sorted": (_sorted(paper), set()),
    }
    # the manifest (careval.manifest) holds the whole resolved config: every change rewrites it, and only it (the report
    # takes it as ancient); the same config with its keys sorted is the same config
    cases = {
        name: (config, reading | ({"manifest"} if name != "the same config, keys sorted" else set()))
        for name, (config, reading) in cases.items()
    }
    print(f"\nconfig/paper.yaml: {len(base)} jobs for {TARGET}")
    for name, (config, reading) in cases.items():
        changed = _dag(config, tmp_path / name.replace(" ", "_"))
        replanned = _replanned(base, changed)
        by_params = {job for job in changed if job not in base or base[job][0] != changed[job][0]}
        print(
            f"{name}: {len(replanned)} jobs replanned ({len(by_params)} read the setting: "
            f"{', '.join(sorted({rule for rule, _ in by_params})) or 'none'})"
        )
        assert {rule for rule, _ in by_params} == reading, name
        # every job of the reading rules, and no other job, reads the setting
        assert len(by_params) == sum(1 for rule, _ in changed if rule in reading), name
    assert {"judge", "judge_repeats", "relaxed_perplexity", "score_open"} <= rules
