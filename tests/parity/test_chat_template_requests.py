"""A chat model's log-likelihood requests against lm-eval 0.4.13's own `--apply_chat_template`, no model run.

lm-eval builds the requests of the authors' task files (each included by a local task YAML over hand-written
rows) with `apply_chat_template=True` and HFLM's own `apply_chat_template` method over the tokenizer of a chat model;
careval's requests, as its inference job sends them to a model with `chat_template: true`
(careval.inference.score_logliks, the backend applying its template: Backend.request_pair), must be the same
(context, continuation) strings: the context wrapped as a user turn with the generation prompt (the task's
description, MMLU's, the system turn before it), the choice without the target delimiter.
The chat-template study (config `studies:`) rests on this.
"""

from __future__ import annotations

import copy
import json

import pytest
from test_mcqa_prompts import ROWS

from careval.datasets.normalise import normalise
from careval.datasets.registry import get_benchmark
from careval.inference import loglik_requests, score_logliks
from support.lm_eval_docs import write_local_task

pytest.importorskip("lm_eval", reason="lm-eval is not installed (it comes with the dev extra)")

# letters and cloze; MMLU's with its `description`, which lm-eval sends as the system turn under a chat template
BENCHMARKS = ("medqa", "medmcqa", "careqa_en", "pubmedqa", "headqa", "mmlu_anatomy")


def lm_eval_requests(
    benchmark: str, doc: dict, folder, chat_template, system_instruction: str | None = None
) -> list[tuple[str, str]]:
    from lm_eval.tasks import TaskManager

    data = folder / f"{benchmark}.jsonl"
    data.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    write_local_task(f"chat_{benchmark}", benchmark, data, folder)
    task = TaskManager(include_path=str(folder), include_defaults=False).load(f"chat_{benchmark}")["tasks"][
        f"chat_{benchmark}"
    ]
    task.build_all_requests(
        apply_chat_template=True, chat_template=chat_template, system_instruction=system_instruction
    )
    return [tuple(instance.arguments) for instance in sorted(task.instances, key=lambda i: i.idx)]


def sent(backend, requests, instruction: str = "") -> list[tuple[str, str]]:
    """The (context, continuation) pairs the inference job's log-likelihood step hands `backend`'s runtime for
    `requests` (score_logliks with the benchmark's instruction), recorded instead of scored."""
    recording, pairs = copy.copy(backend), []
    recording.loglikelihood = lambda batch: pairs.extend(batch) or [0.0] * len(batch)
    score_logliks(recording, requests, instruction)
    return pairs


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_chat_models_choices_are_sent_as_lm_eval_applies_the_chat_template(chat_model, benchmark, tmp_path):
    backend, chat_template = chat_model
    source_row, lm_eval_doc = ROWS[benchmark]
    entry = get_benchmark(benchmark)
    requests = loglik_requests(normalise([source_row], entry), entry)
    ours = sent(backend, requests, entry.instruction)
    theirs = lm_eval_requests(benchmark, lm_eval_doc, tmp_path, chat_template)
    assert ours == theirs
    first_turn = "<|im_start|>system\n" if entry.instruction else "<|im_start|>user\n"
    assert ours[0][0].startswith(first_turn) and ours[0][0].endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("benchmark", ["mmlu_anatomy", "medqa"])
def test_a_system_prompt_is_the_system_turn_before_the_instruction_as_lm_evals_system_instruction(
    chat_model, benchmark, tmp_path
):
    backend, chat_template = chat_model
    with_system = copy.copy(backend)
    with_system.system_prompt = (
        "You are a careful clinician."  # the model's `system_prompt`: lm-eval's --system_instruction
    )
    source_row, lm_eval_doc = ROWS[benchmark]
    entry = get_benchmark(benchmark)
    requests = loglik_requests(normalise([source_row], entry), entry)
    ours = sent(with_system, requests, entry.instruction)
    assert ours == lm_eval_requests(benchmark, lm_eval_doc, tmp_path, chat_template, with_system.system_prompt)


def test_without_a_chat_template_the_requests_are_the_tasks_own(chat_model):
    backend, _ = chat_model
    plain = copy.copy(backend)  # the same model without system prompt or template
    plain.chat_template, plain.system_prompt = False, None
    assert plain.request_pair("Question: q\nAnswer:", " A") == ("Question: q\nAnswer:", " A")
    # the option's own leading space stays (MTSamples' " Urology"): only the delimiter goes
    assert backend.request_pair("Q", "  Urology")[1] == " Urology"


def test_without_a_chat_template_an_instructions_context_is_sent_as_the_task_built_it(chat_model):
    """The instruction goes to the backend apart, but a model without a chat template reads the very context the
    task built (the instruction, then the prompt: lm-eval's plain-text context, tests/parity/test_mcqa_prompts.py),
    after its system prompt as ever."""
    backend, _ = chat_model
    entry = get_benchmark("mmlu_anatomy")
    requests = loglik_requests(normalise([ROWS["mmlu_anatomy"][0]], entry), entry)
    plain = copy.copy(backend)
    plain.chat_template = False
    for system_prompt in (None, "Be brief."):
        plain.system_prompt = system_prompt
        pairs = sent(plain, requests, entry.instruction)
        assert pairs == [(plain.format(c), x) for c, x in requests.select("context", "continuation").rows()]
        assert [c for c, _ in pairs] == [
            f"{system_prompt}\n\n{c}" if system_prompt else c for c in requests["context"].to_list()
        ]
