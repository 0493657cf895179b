"""Speed of shared-prefix scoring against lm-eval 0.4.13's HFLM (issue 15), on the same requests
in one process: SmolLM2-135M, float32, batch 8, 1 thread, 40 real MedQA/MedMCQA questions x 4
options, in the cloze and the letters protocol, and as `lm_eval_task:` benchmarks (issue 37: lm-eval's own
medqa_4options and medmcqa task files on the same rows, in their letters frame and in lm-eval's cloze frame, and
its headqa_en on 40 HEAD-QA rows, their requests as careval's lm-eval path builds them).

Excluded by default (pyproject addopts); run with
``pytest -m benchmark -s tests/backends/test_shared_prefix_speed.py``. Wall and process CPU times are printed,
not asserted (the machine may be shared: on one thread the CPU time is the compute, which other jobs inflate far
less than the wall time); the log-likelihoods are asserted to agree. Next to
each ratio it prints the token-count bound: the tokens the model is fed (padding excluded) by
careval's shared path, by lm-eval and by careval's plain path (``shared_prefix=False``).
lm-eval runs a context once when its continuations are one token (its logits cache groups
requests by context + continuation[:-1]), not for multi-token ones (lm-eval issue #1351).
"""

from __future__ import annotations

import time

import pytest
from mcqa_rows import cloze, letters, questions

from careval.backends.hf.backend import HFBackend
from careval.backends.tokenization import encode_pair, shared_prefix_groups

pytestmark = pytest.mark.benchmark
lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

N_QUESTIONS = 20  # per dataset: 40 questions, 160 requests per protocol


def token_counts(backend, pairs) -> dict[str, int]:
    """Tokens fed to the model by each path (no padding), from careval's own token splits."""
    requests = [encode_pair(backend.tokenizer, c, x, add_bos=backend.add_bos) for c, x in pairs]
    plain = sum(len(c) + len(x) - 1 for c, x in requests)
    groups, rest = shared_prefix_groups(requests, backend.max_length)
    shared = sum(len(requests[g[0]][0]) + sum(len(requests[i][1]) - 1 for i in g) for g in groups)
    shared += sum(len(requests[i][0]) + len(requests[i][1]) - 1 for i in rest)
    # lm-eval runs each distinct context + continuation[:-1] once (Collator, group_by="contexts")
    lm_eval_inputs = {tuple(c + x[:-1]) for c, x in requests}
    return {"shared": shared, "plain": plain, "lm_eval": sum(len(k) for k in lm_eval_inputs)}


@pytest.fixture(scope="module")
def backends(smollm2_dir):
    from lm_eval.models.huggingface import HFLM

    ours = HFBackend.load("smollm2", str(smollm2_dir), dtype="float32", batch_size=8, threads=1)
    theirs = HFLM(pretrained=str(smollm2_dir), backend="causal", device="cpu", dtype="float32", batch_size=8)
    assert ours.max_length == theirs.max_length
    return ours, theirs


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def cpu_timed(fn):
    """(result, wall seconds, this process's CPU seconds): on one thread the CPU time is the compute, which a machine
    shared with other jobs inflates far less than the wall time."""
    cpu = time.process_time()
    out, wall = timed(fn)
    return out, wall, time.process_time() - cpu


def lm_eval_logliks(hflm, pairs):
    from lm_eval.api.instance import Instance

    requests = [Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i) for i, p in enumerate(pairs)]
    return [ll for ll, _ in hflm.loglikelihood(requests, disable_tqdm=True)]


def plain(backend, pairs):
    backend.shared_prefix = False
    try:
        return backend.loglikelihood(pairs)
    finally:
        backend.shared_prefix = True


# lm-eval task files as benchmarks (issue 37), on the same rows: lm-eval's own letters files (medqa_4options,
# medmcqa: single-token continuations, which lm-eval also runs once per context), the same files with lm-eval's
# cloze frame (the options' texts after "Question: ...\nAnswer:", as headqa_en and careval's cloze protocol), and
# lm-eval's own cloze headqa_en on 40 HEAD-QA rows (short questions, long answers)
CLOZE = {
    "medqa": {
        "doc_to_text": "Question: {{sent1}}\nAnswer:",
        "doc_to_choice": "{{[ending0, ending1, ending2, ending3]}}",
    },
    "medmcqa": {"doc_to_text": "Question: {{question}}\nAnswer:", "doc_to_choice": "{{[opa, opb, opc, opd]}}"},
}
LM_EVAL_TASKS = {
    "lm_eval_letters": {"medqa": (N_QUESTIONS, None), "medmcqa": (N_QUESTIONS, None)},
    "lm_eval_cloze": {name: (N_QUESTIONS, CLOZE[name]) for name in CLOZE},
    "lm_eval_headqa": {"headqa": (2 * N_QUESTIONS, None)},
}


def lm_eval_task_pairs(shared_data, folder, tasks: dict[str, tuple[int, dict | None]]) -> list[tuple[str, str]]:
    """The requests of lm-eval's task files (benchmark -> rows, overrides of its file) as benchmarks of a config."""
    from careval.datasets import get_benchmark
    from careval.datasets.lm_eval_tasks import lm_eval_samples
    from careval.inference import loglik_requests
    from support.lm_eval_docs import write_local_tasks

    pairs = []
    for benchmark, (n, overrides) in tasks.items():
        task = write_local_tasks(shared_data, folder, n, benchmarks=(benchmark,), overrides=overrides)[benchmark]
        entry = get_benchmark(benchmark + "_lm", {"lm_eval_task": task, "lm_eval_include": str(folder)})
        requests = loglik_requests(lm_eval_samples(entry), entry)
        pairs += list(zip(requests["context"], requests["continuation"]))
    return pairs


@pytest.mark.parametrize("protocol", ["cloze", "letters", *LM_EVAL_TASKS])
def test_shared_prefix_speed_against_lm_eval(backends, shared_data, tmp_path, protocol):
    ours, theirs = backends
    items = questions(shared_data, "medqa", N_QUESTIONS) + questions(shared_data, "medmcqa", N_QUESTIONS)
    if protocol in LM_EVAL_TASKS:
        pairs = lm_eval_task_pairs(shared_data, tmp_path, LM_EVAL_TASKS[protocol])
        if protocol == "lm_eval_cloze":  # the very requests of careval's cloze protocol
            assert pairs == cloze(items)
    else:
        pairs = {"cloze": cloze, "letters": letters}[protocol](items)
    assert len(pairs) == 8 * N_QUESTIONS
    warm = pairs[:2]  # first-call overheads out of the timings
    ours.loglikelihood(warm), lm_eval_logliks(theirs, warm)

    got, t_shared, cpu_shared = cpu_timed(lambda: ours.loglikelihood(pairs))
    want, t_lm_eval, cpu_lm_eval = cpu_timed(lambda: lm_eval_logliks(theirs, pairs))
    base, t_plain, cpu_plain = cpu_timed(lambda: plain(ours, pairs))
    tokens = token_counts(ours, pairs)

    print(f"\n[{protocol}] {len(pairs)} requests, {len(items)} questions")
    print(f"  careval shared prefix {t_shared:7.1f} s  {cpu_shared:7.1f} CPU-s   {tokens['shared']:7d} tokens")
    print(f"  lm-eval 0.4.13 HFLM   {t_lm_eval:7.1f} s  {cpu_lm_eval:7.1f} CPU-s   {tokens['lm_eval']:7d} tokens")
    print(f"  careval plain path    {t_plain:7.1f} s  {cpu_plain:7.1f} CPU-s   {tokens['plain']:7d} tokens")
    print(
        f"  speed-up vs lm-eval {t_lm_eval / t_shared:5.2f}x wall, {cpu_lm_eval / cpu_shared:5.2f}x CPU"
        f"  (token bound {tokens['lm_eval'] / tokens['shared']:5.2f}x)"
    )
    print(
        f"  speed-up vs plain   {t_plain / t_shared:5.2f}x  (token bound {tokens['plain'] / tokens['shared']:5.2f}x;"
        f" tokens run / tokens of the plain path = {tokens['shared'] / tokens['plain']:.3f})"
    )
    print(
        f"  max |careval - lm-eval| = {max(abs(a - b) for a, b in zip(got, want)):.2e}, "
        f"max |shared - plain| = {max(abs(a - b) for a, b in zip(got, base)):.2e}"
    )
    assert got == pytest.approx(want, abs=1e-4)
    assert got == pytest.approx(base, abs=1e-4)
