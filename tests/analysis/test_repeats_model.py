"""Self-consistency and rephrasing through the real HF backend on a tiny random-weight Llama."""

import polars as pl
import pytest

from careval.analysis.statistics.spread import per_sample_spread, score_repeat_perplexity, score_repeats
from careval.backends import load_backend
from careval.backends.base import Sampling
from careval.datasets.registry import get_benchmark
from careval.jobs import repeats as repeats_module
from careval.jobs.repeats import REPHRASE_SYSTEM_PROMPT, consistency_logliks, consistency_samples, rephrase_outputs

SAMPLES = pl.DataFrame(
    {
        "id": ["q1", "q2"],
        "question": ["What is the first-line treatment for hypertension?", "Is aspirin contraindicated in bleeding?"],
        "context": [None, None],
        "reference": ["Lifestyle changes.", "Aspirin is contraindicated in patients with active bleeding."],
    }
)
SAMPLING = Sampling(max_new_tokens=8, temperature=1.0, top_p=0.9, seed=3)


@pytest.fixture(scope="module")
def backend(tiny_spec):
    return load_backend(tiny_spec)


def test_perplexity_is_exactly_self_consistent_and_sampled_text_is_not(backend):
    benchmark = get_benchmark("demo_open_qa", {})
    samples = consistency_samples(backend, SAMPLES, benchmark, 3, SAMPLING)
    assert samples.height == 6 and sorted(samples["repeat"].unique()) == [0, 1, 2]
    assert samples.filter(pl.col("id") == "q1")["output"].n_unique() > 1  # real draws, not one text repeated
    spread = per_sample_spread(
        pl.concat(
            [
                score_repeat_perplexity(SAMPLES, consistency_logliks(backend, SAMPLES, benchmark, 3)),
                score_repeats(SAMPLES, samples, ["rouge"]),
            ]
        )
    )
    perplexity = spread.filter(pl.col("metric").str.contains("perplexity|bits_per_byte"))
    assert perplexity.height == 2 * 6 and set(perplexity["n"]) == {3}
    assert perplexity["variance"].to_list() == [0.0] * perplexity.height  # exactly, not approximately
    ok_per_prompt = samples.filter(pl.col("status") == "ok").group_by("id").len().sort("id")["len"].to_list()
    assert (
        spread.filter(pl.col("metric") == "rouge1").sort("id")["n"].to_list() == ok_per_prompt
    )  # empty draws counted out


def test_rephrasing_sends_each_answer_k_times_and_counts_failed_answers():
    class Recorder:
        def generate(self, prompts, sampling, instruction=None):
            self.prompts = prompts
            return [f"reworded {n}" if n != 1 else " " for n in range(len(prompts))]

    generations = pl.DataFrame(
        {"id": ["a", "b", "c"], "output": ["first answer", "", "third answer"], "status": ["ok", "empty_output", "ok"]}
    )
    recorder = Recorder()
    frame = rephrase_outputs(recorder, generations, 2, SAMPLING)
    assert recorder.prompts == ["first answer", "first answer", "third answer", "third answer"]
    assert frame.select("id", "repeat", "status").rows() == [
        ("a", 0, "ok"),
        ("a", 1, "empty_output"),
        ("b", 0, "source_empty_output"),
        ("b", 1, "source_empty_output"),
        ("c", 0, "ok"),
        ("c", 1, "ok"),
    ]


def test_rephrasing_model_gets_the_papers_system_prompt(monkeypatch, tmp_path, tiny_spec):
    import careval.backends.cached as cached

    seen = {}
    real = cached.CachedBackend.__init__

    def spy(self, spec, *args, **kwargs):
        seen["system_prompt"] = spec.system_prompt
        real(self, spec, *args, **kwargs)

    monkeypatch.setattr(cached.CachedBackend, "__init__", spy)  # the job's backend, built from the job's spec
    generations = tmp_path / "g.parquet"
    pl.DataFrame({"id": ["a"], "output": ["The patient has hypertension."], "status": ["ok"]}).write_parquet(
        generations
    )
    repeats_module.run_rephrasing(
        generations,
        tiny_spec,
        2,
        repeats_module.repeat_sampling(
            {"max_new_tokens": 64, "temperature": 0.0, "seed": 5},
            {"max_new_tokens": 6, "temperature": 1.0, "top_p": 0.9},
        ),
        tmp_path / "r.parquet",
        limit=1,
        request_batch=8,
    )
    assert seen["system_prompt"] == REPHRASE_SYSTEM_PROMPT
    assert REPHRASE_SYSTEM_PROMPT.startswith("You are a helpful rephrasing assistant.")
    assert pl.read_parquet(tmp_path / "r.parquet").height == 2


def test_greedy_repeats_are_refused(backend):
    with pytest.raises(ValueError, match="need sampling"):
        consistency_samples(backend, SAMPLES, get_benchmark("demo_open_qa", {}), 2, Sampling(temperature=0.0))
