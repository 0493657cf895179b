"""The request cache on the backend interface (careval.backends.cached): what a job computes again and what it reads,
counted on an engine that counts its calls; the same outputs with the cache as without it."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import careval.backends.cached as cached_module
import careval.backends.model_facts as facts_module
from careval.backends import Backend, Capabilities, Continuation, PrefixedTarget, register_backend
from careval.backends.base import Sampling, Usage, step_prefixes
from careval.backends.cached import CachedBackend
from careval.backends.model_facts import model_facts
from careval.datasets import build_benchmark, get_benchmark
from careval.inference import run_inference, sampling_for
from careval.jobs.judge import run_judge
from careval.request_cache import RequestCache, digest
from support.specs import local_model_spec

COUNTING = Capabilities(prompt_logprobs=True, top_logprobs=False, chat_template=False, max_gpus=0)
CALLS: list[tuple[str, int]] = []  # (method, requests) of every engine call, in order
LOADS: list[str] = []


@register_backend("counting", COUNTING)
class CountingBackend(Backend):
    """An engine that records its calls: numbers from the texts' lengths, verdicts "[RESULT] n"."""

    backend, capabilities = "counting", COUNTING

    def __init__(self, spec):
        self.name, self.max_length = spec.name, 4096
        LOADS.append(spec.name)

    def encode(self, text):
        return [ord(ch) % 50 for ch in text]

    def generate(self, prompts, sampling, instruction=None):
        CALLS.append(("generate", len(prompts)))
        self.last_usage = [Usage(len(p), 3) for p in prompts]
        return [f"Fine. [RESULT] {1 + len(p) % 5}" for p in prompts]

    def loglikelihood(self, pairs):
        CALLS.append(("loglikelihood", len(pairs)))
        self.last_usage = [Usage(len(c) + len(x), 0) for c, x in pairs]
        return [-len(x) / (1 + len(c)) for c, x in pairs]

    def loglikelihood_rolling(self, texts):
        CALLS.append(("loglikelihood_rolling", len(texts)))
        return [-len(text) / 10 for text in texts]

    def sample_continuations(self, prompt_ids, *, n, max_tokens, top_p, seed):
        CALLS.append(("sample_continuations", 1))
        return [Continuation((i,) * max_tokens, -float(i)) for i in range(n)]

    def target_logprobs(self, prompt_ids, continuations, lengths, targets):
        CALLS.append(("target_logprobs", len(targets)))
        prefixes = [p for group in step_prefixes(continuations, lengths).values() for p in group]
        return [{p: PrefixedTarget(-0.1 * len(p), -0.2 * len(t)) for p in prefixes} for t in targets]


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()
    LOADS.clear()


def counting_spec(tmp_path: Path, name: str = "model", cache: bool = True, **entry):
    (tmp_path / "weights").mkdir(exist_ok=True)
    spec = local_model_spec(name, tmp_path / "weights", cache_dir=tmp_path / "cache" if cache else None, **entry)
    return replace(spec, backend="counting")


def computed(method: str | None = None) -> int:
    return sum(n for m, n in CALLS if method in (None, m))


def samples(tmp_path: Path, benchmark: str, limit: int, **overrides) -> tuple[Path, object]:
    entry = get_benchmark(benchmark, overrides)
    path = tmp_path / f"{benchmark}-{limit}-{len(overrides)}.parquet"
    build_benchmark(entry, path, limit=limit)
    return path, entry


def infer(spec, path, entry, out: Path, batch: int = 8) -> None:
    sampling = sampling_for(entry, {"max_new_tokens": 8, "temperature": 0.0, "seed": 1})
    generations = out / "gen.parquet" if entry.generates else None
    run_inference(path, entry, spec, sampling, out / "loglik.parquet", generations, request_batch=batch)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_raising_a_limit_computes_only_the_new_samples_batches(tmp_path, capsys):
    spec = counting_spec(tmp_path)
    path16, entry = samples(tmp_path, "demo_open_qa", 16)
    infer(spec, path16, entry, tmp_path / "16")
    assert computed("generate") == 16 and LOADS == ["model"]
    CALLS.clear()
    capsys.readouterr()
    path20, entry = samples(tmp_path, "demo_open_qa", 20)
    infer(spec, path20, entry, tmp_path / "20")
    # the two batches of 8 are read; only the batch of the 4 new samples is computed: its 4 answers and its 8
    # reference log-likelihoods (alone and given the question)
    assert computed("generate") == 4 and computed("loglikelihood") + computed("loglikelihood_rolling") == 8
    assert "cache: 48 requests from the cache, 12 computed" in capsys.readouterr().out
    # the same bytes as a run from scratch at 20 without the cache
    infer(counting_spec(tmp_path, cache=False), path20, entry, tmp_path / "scratch")
    for name in ("loglik.parquet", "gen.parquet"):
        assert sha(tmp_path / "20" / name) == sha(tmp_path / "scratch" / name)
    tokens = pl.read_parquet(tmp_path / "20" / "gen.parquet")
    assert tokens["generated_tokens"].to_list() == [3] * 20  # as the engine counted, cached or not


def test_a_job_whose_calls_are_all_cached_loads_no_model(tmp_path, capsys):
    spec = counting_spec(tmp_path)
    path, entry = samples(tmp_path, "demo_mcqa", 6)
    infer(spec, path, entry, tmp_path / "first")
    LOADS.clear()
    CALLS.clear()
    capsys.readouterr()
    infer(spec, path, entry, tmp_path / "again")
    out = capsys.readouterr().out
    assert LOADS == [] and CALLS == [] and "loaded model" not in out
    assert "cache: 24 requests from the cache, 0 computed" in out  # 6 questions x 4 options
    assert sha(tmp_path / "again" / "loglik.parquet") == sha(tmp_path / "first" / "loglik.parquet")


def test_a_prompt_change_on_one_benchmark_leaves_the_others_entries_used(tmp_path):
    spec = counting_spec(tmp_path)
    mcqa, mcqa_entry = samples(tmp_path, "demo_mcqa", 4)
    note, note_entry = samples(tmp_path, "demo_note", 3)
    infer(spec, mcqa, mcqa_entry, tmp_path / "mcqa")
    infer(spec, note, note_entry, tmp_path / "note")
    CALLS.clear()
    changed = get_benchmark("demo_mcqa", {"prompt": "Q: {question}\nA:"})
    infer(spec, mcqa, changed, tmp_path / "mcqa2")
    infer(spec, note, note_entry, tmp_path / "note2")
    assert computed() == 16  # the 4 questions' 4 options again, under the new prompt; demo_note: all read
    assert sha(tmp_path / "note2" / "gen.parquet") == sha(tmp_path / "note" / "gen.parquet")
    assert sha(tmp_path / "note2" / "loglik.parquet") == sha(tmp_path / "note" / "loglik.parquet")


def test_what_decides_a_number_is_the_key_and_the_models_name_is_not(tmp_path):
    spec = counting_spec(tmp_path)
    facts = model_facts(spec)
    assert "name" not in facts and facts["backend"] == "counting" and "content" in facts
    assert facts["device"] in ("cpu", "gpu") and facts["software"]["torch"]  # where the engine runs, on what
    renamed = replace(spec, name="the-same-weights", label="another label", threads=7)
    assert model_facts(renamed) == facts  # a model re-added under another name shares its entries
    for changed in (replace(spec, dtype="bfloat16"), replace(spec, batch_size=4), replace(spec, system_prompt="Hi.")):
        assert model_facts(changed) != facts


def test_a_prompts_instruction_is_part_of_its_formats_key(tmp_path):
    """The same prompt under two instructions is two entries (formatted or generated); a prompt without one keeps
    the key it always had."""
    spec = counting_spec(tmp_path)
    for run in ("computed", "read"):
        with CachedBackend(spec, spec.cache_dir) as cached:
            assert cached.format("Q", "Be brief. ") == "Be brief. Q"
            assert cached.format("Q", "Be thorough. ") == "Be thorough. Q"
            assert cached.format("Q") == "Q"
            assert digest({"model": model_facts(spec), "call": "format", "args": ["Q"]}) in cached._known
            for instruction in ("Be brief. ", "Be thorough. ", None):
                cached.generate(["Q"], Sampling(), instruction)
        assert len(LOADS) == (1 if run == "computed" else 0)  # the second job reads them all: no model
        assert computed("generate") == 3  # three prompts apart, all computed by the first job
        LOADS.clear()


def test_a_log_likelihood_request_is_sent_as_the_models_chat_template_wants_without_loading_it(tmp_path):
    """Backend.request_pair on the job's backend: the context formatted (read from the cache in a second job, no
    model loaded), the continuation without lm-eval's target delimiter where the spec applies a chat template."""
    for chat_template, continuation in ((False, " A"), (True, "A")):
        folder = tmp_path / f"chat_template={chat_template}"
        folder.mkdir()
        spec = replace(counting_spec(folder), chat_template=chat_template)
        LOADS.clear()
        for _ in ("computed", "read"):
            with CachedBackend(spec, spec.cache_dir) as cached:
                assert cached.request_pair("Q:", " A", "Be brief. ") == ("Be brief. Q:", continuation)
                assert cached.request_pair("Q:", "  Urology")[1] == continuation.replace("A", " Urology")
        assert LOADS == ["model"]  # by the first job's format calls; the second job read them


def test_a_jury_of_one_model_under_two_names_computes_each_grading_prompt_once(tmp_path, capsys):
    """Two judges of the same weights are sent the same prompts: the second judge's are all read."""
    path, entry = samples(tmp_path, "demo_open_qa", 4)
    spec = counting_spec(tmp_path, name="answerer")
    infer(spec, path, entry, tmp_path / "answers")
    options = {"rubrics": ["helpfulness", "honesty"], "retries": 0, "temperature": 0.0, "max_new_tokens": 8}
    CALLS.clear()
    for judge in ("judge-a", "judge-b"):
        run_judge(
            path,
            tmp_path / "answers" / "gen.parquet",
            tmp_path / f"{judge}.parquet",
            counting_spec(tmp_path, name=judge),
            options,
            request_batch=8,
        )
    assert computed("generate") == 4 * 2  # 4 answers x 2 rubrics, by the first judge only
    assert computed("loglikelihood") == 4 * 2 * 5  # its score distributions: 5 scores per verdict
    assert sha(tmp_path / "judge-a.parquet") == sha(tmp_path / "judge-b.parquet")
    assert capsys.readouterr().out.count("cache: 48 requests from the cache, 0 computed") == 1


def test_a_continuing_call_missed_after_a_cached_one_replays_it_first(tmp_path):
    """The hf backend scores Relaxed Perplexity's targets on its sampler's cache: a target call the cache cannot
    answer after a sampling call it could, replays the sampling on the engine first."""
    spec = counting_spec(tmp_path)
    first = CachedBackend(spec, spec.cache_dir)
    conts = first.sample_continuations([1, 2], n=3, max_tokens=4, top_p=0.9, seed=1)
    first.target_logprobs([1, 2], [c.token_ids for c in conts], [0, 4], [[5, 6]])
    CALLS.clear()
    again = CachedBackend(spec, spec.cache_dir)
    conts = again.sample_continuations([1, 2], n=3, max_tokens=4, top_p=0.9, seed=1)  # read
    again.target_logprobs([1, 2], [c.token_ids for c in conts], [0, 4], [[7]])  # a new target: computed
    assert CALLS == [("sample_continuations", 1), ("target_logprobs", 1)]  # the sampling replayed, then the target
    assert (again.hits, again.computed) == (1, 1)


def test_a_truncated_entry_is_recomputed_with_a_warning(tmp_path, capsys):
    spec = counting_spec(tmp_path)
    backend = CachedBackend(spec, spec.cache_dir)
    want = backend.loglikelihood([("Q", " A")])
    for entry in Path(spec.cache_dir).glob("??/*"):
        entry.write_bytes(entry.read_bytes()[:-5])  # a copy cut short
    CALLS.clear()
    again = CachedBackend(spec, spec.cache_dir)
    assert again.loglikelihood([("Q", " A")]) == want
    assert CALLS == [("loglikelihood", 1)] and "is a torn entry" in capsys.readouterr().out
    assert not list(Path(spec.cache_dir).glob("??/.*.tmp"))


def test_other_weights_of_the_same_size_with_their_time_set_back_miss_the_cache(tmp_path, monkeypatch):
    """A folder's weights replaced by others of the same size, their modification time set back (`touch -r`, as
    `rsync -a` or `cp -p` leave it): the folder's content decides the key, so the next call is computed; an
    untouched folder's files are not read again (their digests are remembered by their state)."""
    spec = counting_spec(tmp_path)
    weights = tmp_path / "weights" / "model.safetensors"
    weights.write_bytes(b"A" * 4096)
    (tmp_path / "weights" / "tokenizer.json").write_text("{}")
    CachedBackend(spec, spec.cache_dir).loglikelihood([("Q", " A")])
    reads = []
    real_open = open
    monkeypatch.setattr(facts_module, "open", lambda path, *a: reads.append(path) or real_open(path, *a), raising=False)
    facts_module._FILE_DIGESTS.clear()  # as a new job's process: the digests are read from the cache folder
    CALLS.clear()
    CachedBackend(spec, spec.cache_dir).loglikelihood([("Q", " A")])
    assert CALLS == [] and reads == []  # read from the cache, and no file of the folder read to know it
    (tmp_path / "stamp").write_bytes(b"")
    subprocess.run(["touch", "-r", str(weights), str(tmp_path / "stamp")], check=True)
    weights.write_bytes(b"B" * 4096)  # other weights, the same size
    subprocess.run(["touch", "-r", str(tmp_path / "stamp"), str(weights)], check=True)  # its old time back
    assert weights.stat().st_mtime_ns == (tmp_path / "stamp").stat().st_mtime_ns
    CachedBackend(spec, spec.cache_dir).loglikelihood([("Q", " A")])
    assert CALLS == [("loglikelihood", 1)]  # a miss: computed on the new weights
    assert reads == [str(weights)]  # only the changed file was read again


def test_a_hub_model_is_keyed_by_the_commit_its_snapshot_resolves_to(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    refs = tmp_path / "hub" / "models--org--model" / "refs"
    refs.mkdir(parents=True)
    spec = replace(counting_spec(tmp_path), weights="hf:org/model", path="org/model")
    (refs / "main").write_text("a" * 40)
    first = model_facts(spec)
    assert first["revision"] == "a" * 40
    (refs / "main").write_text("b" * 40)  # the hub's main moved, and a load fetched it
    assert model_facts(spec)["revision"] == "b" * 40 and model_facts(spec) != first


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda v: v[:-1], "loglikelihood of 3 requests: 2 values"),
        (lambda v: [*v, -1.0], "loglikelihood of 3 requests: 4 values"),
        (lambda v: [v[0], "x", v[2]], "loglikelihood of 3 requests: value 2 is not one of numbers"),
        (lambda v: [v[0], None, v[2]], "loglikelihood of 3 requests: value 2 is not one of numbers"),
    ],
)
def test_an_entry_edited_to_a_wrong_shape_is_named_removed_and_recomputed(tmp_path, capsys, edit, why):
    """A log-likelihood list one value short (once a NaN and a counted failure), one too many, a value of another
    type: a torn entry, named with what is wrong, removed, and computed again: the right values, never a NaN."""
    spec = counting_spec(tmp_path)
    pairs = [("Q", " A"), ("Q", " BB"), ("Q", " CCC")]
    want = CachedBackend(spec, spec.cache_dir).loglikelihood(pairs)
    (path,) = Path(spec.cache_dir).glob("??/*")
    entry = RequestCache(spec.cache_dir).get(path.name)
    RequestCache(spec.cache_dir).put(path.name, {**entry, "value": edit(entry["value"])})
    CALLS.clear()
    capsys.readouterr()
    assert CachedBackend(spec, spec.cache_dir).loglikelihood(pairs) == want
    assert CALLS == [("loglikelihood", 3)]
    assert capsys.readouterr().out.splitlines()[0] == f"cache: {path} is a torn entry ({why}); removed and recomputed"
    assert RequestCache(spec.cache_dir).get(path.name)["value"] == want  # written back whole


def test_an_answer_short_is_recomputed_not_a_shape_error(tmp_path, capsys):
    """One generated answer short (once polars' ShapeError, naming no entry, on every rerun): the entry is named,
    removed and computed again, and the job writes the same bytes as one that never read it."""
    spec = counting_spec(tmp_path)
    path, entry = samples(tmp_path, "demo_open_qa", 4)
    infer(spec, path, entry, tmp_path / "first")
    store = RequestCache(spec.cache_dir)
    short = []
    for file in Path(spec.cache_dir).glob("??/*"):
        value = store.get(file.name)
        answers = value.get("value") if isinstance(value, dict) else None
        if isinstance(answers, list) and len(answers) == 4 and all(isinstance(v, str) for v in answers):
            store.put(file.name, {**value, "value": answers[:-1], "usage": value["usage"][:-1]})
            short.append(file)
    assert len(short) == 1  # the batch of 4 answers
    CALLS.clear()
    capsys.readouterr()
    infer(spec, path, entry, tmp_path / "again")
    assert CALLS == [("generate", 4)]
    out = capsys.readouterr().out
    assert f"cache: {short[0]} is a torn entry (generate of 4 requests: 3 values); removed and recomputed\n" in out
    assert sha(tmp_path / "again" / "gen.parquet") == sha(tmp_path / "first" / "gen.parquet")


def test_a_cache_folder_that_cannot_be_written_is_one_warning_line(tmp_path, capsys, monkeypatch):
    """A read-only cache folder: every call computed, the results right, one warning line (not one per entry)."""
    spec = counting_spec(tmp_path)
    folder = Path(spec.cache_dir)
    monkeypatch.setattr(
        cached_module.RequestCache, "put", lambda *a: (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
    )
    monkeypatch.setattr("careval.request_cache._UNWRITABLE", set())
    path, entry = samples(tmp_path, "demo_open_qa", 20)
    infer(spec, path, entry, tmp_path / "ro")
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "cannot be written" in line]
    assert warnings == [
        f"careval warning: request cache {folder} cannot be written (Permission denied): this job's calls are "
        "computed and not kept (no further warning)"
    ]
    infer(counting_spec(tmp_path, cache=False), path, entry, tmp_path / "scratch")
    assert sha(tmp_path / "ro" / "gen.parquet") == sha(tmp_path / "scratch" / "gen.parquet")


def test_a_job_read_from_the_cache_records_what_its_results_needed(tmp_path):
    """Each entry keeps its requests' tokens and the call's seconds and GPUs: a job remade from the cache computes
    nothing but records what its results needed, the computing job's tokens and seconds."""
    spec = counting_spec(tmp_path)
    records = []
    for run in ("first", "again"):
        record = tmp_path / f"{run}.requests.json"
        with CachedBackend(spec, spec.cache_dir, record) as backend:
            backend.loglikelihood([("Q", " A"), ("Q", " BB")])
        records.append(json.loads(record.read_text()))
    first, again = records
    assert (first["computed"], again["computed"], again["cached"]) == (2, 0, 2)
    assert first["prompt_tokens"] == (1 + 2) + (1 + 3) and again["prompt_tokens"] == 0  # what this run computed
    # what the results needed: the computing run's tokens and seconds, the same whether read or computed
    assert again["needed_prompt_tokens"] == first["needed_prompt_tokens"] == first["prompt_tokens"]
    assert again["needed_seconds"] == first["needed_seconds"] > 0
    assert again["needed_gpu_seconds"] == 0 and again["needed_uncosted"] == 0  # a CPU engine: no GPU


def test_with_the_cache_off_every_request_is_computed(tmp_path, capsys):
    spec = counting_spec(tmp_path, cache=False)
    backend = CachedBackend(spec, spec.cache_dir)
    backend.loglikelihood([("Q", " A")])
    backend.loglikelihood([("Q", " A")])
    backend.finish()
    assert computed() == 2 and "cache: off (resources.cache: false), 2 requests computed" in capsys.readouterr().out
    assert not (tmp_path / "cache").exists()
