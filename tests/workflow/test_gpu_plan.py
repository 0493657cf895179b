"""The paper plan's LLM jobs ask SLURM for exactly the GPUs their backend uses (no GPU, no job run).

Walks the DAG Snakemake builds for config/paper.yaml (its Python API, as `snakemake -n` does) and
checks, for every job that loads a model, that the model spec handed to its script carries the job's own
`gpu` resource. The bug this guards against: Relaxed Perplexity, judge and CareQA jobs built their
backend without the job's GPU count, so a 70B model would start vLLM on one GPU.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from workflow_runs import job_kind, planned_dag

REPO = Path(__file__).resolve().parents[2]


def _llm_jobs(configfile: Path, workdir: Path, target: str) -> list:
    return [
        (job["rule"], job["wildcards"], job["spec"], job["gpu"]) for job in _model_jobs(configfile, workdir, target)
    ]


def _model_jobs(configfile: Path, workdir: Path, target: str) -> list[dict]:
    with planned_dag(REPO / "Snakefile", workdir, configfile, target, forceall=True, cores=64) as workflow:
        return [
            {
                "rule": job.rule.name,
                "wildcards": dict(job.wildcards),
                "spec": asdict(job.params.job.spec.loaded_model()),
                "gpu": job.resources["gpu"],
                "threads": job.threads,
                "llm_slot": job.resources["llm_slot"],
                "engine": [str(engine)] if (engine := getattr(job.input, "engine", None)) else [],
                "group": job.rule._group,  # the rule's own (`group` is None outside a cluster run)
                "output": [str(f) for f in job.output],
            }
            for job in workflow.dag.jobs
            if "job" in job.params.keys() and job.params.job.spec.loaded_model()  # noqa: SIM118  (Namedlist)
        ]


def _variant(wildcards: dict) -> str:
    """A study variant's name from its job's folder (wildcard vpath: studies/<study>/<variant>/[run<r>/]); "" for
    the run's own jobs."""
    parts = wildcards.get("vpath", "").split("/")
    return parts[2] if parts[0] == "studies" and len(parts) > 2 else ""


@pytest.fixture(scope="module")
def paper_jobs(tmp_path_factory):
    return _llm_jobs(REPO / "config" / "paper.yaml", tmp_path_factory.mktemp("paper"), "results/correlations.pdf")


def test_every_llm_job_of_the_paper_plan_asks_for_the_gpus_its_backend_uses(paper_jobs):
    assert len(paper_jobs) > 800
    mismatched = [
        (rule, wildcards, spec["gpus"], gpu) for rule, wildcards, spec, gpu in paper_jobs if spec["gpus"] != gpu
    ]
    assert mismatched == []
    assert {rule for rule, *_ in paper_jobs} >= {
        "infer_open",
        "infer_closed",
        "relaxed_perplexity",
        "judge",
        "judge_repeats",
        "rephrase",
        "sample_consistency",
    }


def test_size_classes_reach_every_job_kind(paper_jobs):
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    sizes = {name: paper["model_sizes"][entry["size"]]["gpus"] for name, entry in paper["models"].items()}
    # the studies' rephrasers (inline entries, like the run's) and the model Table 6's study puts in Mistral's place
    rephrasers = paper["studies"]["rephraser"]["sweep"]["analysis.resilience"]["rephraser"]
    in_place = paper["studies"]["general_vs_medical"]["sweep"]["models"]
    for rule, wildcards, spec, gpu in paper_jobs:
        loaded, kind = spec["name"], job_kind(rule, wildcards).removeprefix("study_")
        variant = _variant(wildcards)
        if kind in ("judge", "judge_repeats"):  # the inline prometheus-7b-v2.0 judge of size class small
            assert (loaded, gpu) == ("prometheus-7b-v2.0", paper["model_sizes"]["small"]["gpus"])
        elif kind == "rephrase":  # the inline Qwen2.5-72B-Instruct rephraser of its own size class (or a study's)
            entry = (
                rephrasers[variant.removeprefix("rephraser=")]
                if variant
                else paper["analysis"]["resilience"]["rephraser"]
            )
            name = entry["source"].rsplit("/", 1)[-1]
            assert (loaded, gpu) == (name, paper["model_sizes"][entry["size"]]["gpus"]), (rule, wildcards)
        elif variant.startswith("model="):  # the study's other model, on that model's GPUs
            other = in_place[variant.removeprefix("model=")]
            assert (loaded, gpu) == (other, sizes[other]), (rule, wildcards)
        else:
            assert (loaded, gpu) == (wildcards["model"], sizes[wildcards["model"]]), (rule, wildcards)
    seventy_b = Counter(
        job_kind(rule, wildcards)
        for rule, wildcards, spec, gpu in paper_jobs
        if wildcards.get("model") == "Llama-3.1-70B-Instruct"
    )
    assert seventy_b["relaxed_perplexity"] == 3  # OLAPH, CareQA-Open, MedText, each on the size class's 4 GPUs


def test_careqa_llm_jobs_take_their_models_gpus(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    # a vLLM model (tensor-parallel): the hf backend runs a model on one GPU at most (its declared capabilities)
    config["models"]["smollm2-135m-instruct"].update(gpus=2, backend="vllm", dtype="bfloat16")
    for edition in config["careqa"]["editions"]:  # the demo exam's files, read from the repository
        edition.update({part: str(REPO / edition[part]) for part in ("booklet", "key")})
    path = tmp_path / "careqa.yaml"
    path.write_text(yaml.safe_dump(config))
    jobs = _llm_jobs(path, tmp_path, "results/careqa/CareQA_en_open.parquet")
    careqa = {rule: gpu for rule, _, spec, gpu in jobs if rule.startswith("careqa_")}
    assert careqa == {
        "careqa_translate": 2,
        "careqa_rephrase": 2,
        "careqa_rephrase_iteration2": 2,
        "careqa_validate": 2,
    }


SERVED_RULES = {"infer_open", "infer_closed", "relaxed_perplexity", "sample_consistency"}


def test_a_shared_engine_holds_the_gpus_and_serves_the_models_llm_jobs(tmp_path):
    """engine: shared on every paper model: one vllm_engine job per model asks for the model's GPUs
    (its server's tensor-parallel size); the model's LLM jobs, in its group, ask for none and read the
    engine's address file; the judge and the rephraser still load their own model on their own GPUs."""
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    for entry in paper["models"].values():
        entry["engine"] = "shared"
    path = tmp_path / "shared.yaml"
    path.write_text(yaml.safe_dump(paper))
    jobs = _model_jobs(path, tmp_path, "results/correlations.pdf")
    sizes = {name: paper["model_sizes"][entry["size"]]["gpus"] for name, entry in paper["models"].items()}
    engines = {job["wildcards"]["model"]: job for job in jobs if job["rule"] == "vllm_engine"}
    assert set(engines) == set(paper["models"])  # one engine per model
    for model, job in engines.items():
        assert (job["gpu"], job["spec"]["gpus"], job["llm_slot"]) == (sizes[model], sizes[model], 1)
        assert job["group"] == "llm_{model}" and job["output"] == [f"results/engines/{model}.json"]
    # the run's own jobs: a study variant's job (under its folder) runs other settings than the engine serves
    served = [job for job in jobs if job_kind(job["rule"], job["wildcards"]) in SERVED_RULES]
    assert len(served) > 600  # 21 models x (inference, Relaxed Perplexity, self-consistency jobs)
    for job in served:
        model = job["wildcards"]["model"]
        assert (job["gpu"], job["threads"], job["llm_slot"]) == (0, 0, 0), job
        assert job["engine"] == [f"results/engines/{model}.json"] and job["group"] == "llm_{model}"
    others = [job for job in jobs if job_kind(job["rule"], job["wildcards"]) not in SERVED_RULES | {"vllm_engine"}]
    assert {job["rule"] for job in others} >= {"judge", "judge_repeats", "rephrase"}
    assert all(job["gpu"] == job["spec"]["gpus"] > 0 and not job["engine"] for job in others)
