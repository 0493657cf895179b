"""The Prometheus LLM judge: absolute 1-5 grades against a reference answer, with prometheus-eval's own prompts and parser.

prometheus-eval (0.1.20) supplies the text: ABSOLUTE_PROMPT (the with-reference absolute
template), ABS_SYSTEM_PROMPT, SCORE_RUBRIC_TEMPLATE, the predefined rubrics (load_rubric) and
the absolute-grading parser (parser.parse_output). The judge itself runs through careval's
backend protocol, so the same code grades with prometheus-7b-v2.0 on vLLM or a small chat
model through transformers on a CPU.

Unparseable verdicts are asked again (prometheus-eval's batch_completions_with_retries does the
same), each attempt with its own sampling seed so that a retry can answer differently.

Then the judge's own score distribution (judge_distribution.py): its probabilities of "1".."5"
after its feedback and "[RESULT]", one scoring pass per verdict. Per sample and rubric:

* ``judge_<rubric>``: prometheus-eval's parsed score (status ``ok``); for a verdict still
  unparseable after the last attempt, the most likely score of the distribution (status
  ``from_distribution``), or NaN with status ``parse_error`` when the judge gives no
  log-probabilities (an OpenAI-compatible endpoint) -- never a made-up 1 or 5.
* ``judge_<rubric>_expected``: the probability-weighted mean score (G-Eval), status ``ok``, or
  NaN with status ``no_logprobs``.

Both rows carry the five probabilities (columns p1..p5, null where there are none).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import polars as pl
from prometheus_eval.parser import parse_output
from prometheus_eval.prompts import ABS_SYSTEM_PROMPT, ABSOLUTE_PROMPT, SCORE_RUBRIC_TEMPLATE, load_rubric

from careval.backends.base import Backend, Sampling
from careval.batches import batches_keeping_duplicates
from careval.metrics.judge_distribution import (
    SCORES,
    expected_score,
    most_likely,
    score_distributions,
    top_distribution,
)
from careval.metrics.registry import JUDGE_EXPECTED_SUFFIX, JUDGE_VERDICT_STATUSES
from careval.schema import with_schema_defaults
from careval.schemas import JUDGE_PROBABILITY_COLUMNS, JUDGE_SCORE_SCHEMA

# The rubric names prometheus_eval.prompts.load_rubric knows.
PREDEFINED_RUBRICS = ("helpfulness", "harmlessness", "honesty", "factual_validity", "reasoning")
RUBRIC_FIELDS = (
    "criteria",
    "score1_description",
    "score2_description",
    "score3_description",
    "score4_description",
    "score5_description",
)
# The schema's defaults of metrics.judge are prometheus-eval's absolute_grade ones
# (utils.batch_completions_with_retries): max_tokens 1024, temperature 1.0, top_p 0.9, max_retries 10.
# Its repetition_penalty 1.03 has no counterpart in careval's Sampling and is not applied.

# (prompts, attempt) -> one output per prompt; attempt counts from 0.
Generate = Callable[[list[str], int], list[str]]


class JudgeConfigError(ValueError):
    """metrics.judge names a rubric that does not exist; the message names the key."""


def metric_name(rubric_name: str) -> str:
    return f"judge_{rubric_name}"


def expected_metric_name(rubric_name: str) -> str:
    return f"{metric_name(rubric_name)}{JUDGE_EXPECTED_SUFFIX}"


def rubric_text(rubric: str | dict) -> tuple[str, str]:
    """(name, rubric text): a predefined prometheus-eval rubric by name, or a custom one filled into SCORE_RUBRIC_TEMPLATE."""
    if isinstance(rubric, dict) and str(rubric.get("name", "")).endswith(JUDGE_EXPECTED_SUFFIX):
        # judge_x_expected would be both rubric x's expected score and rubric x_expected's grade
        raise JudgeConfigError(
            f"metrics.judge.rubrics: rubric name {rubric['name']!r} must not end in {JUDGE_EXPECTED_SUFFIX!r}"
        )
    if isinstance(rubric, str):
        if rubric not in PREDEFINED_RUBRICS:
            raise JudgeConfigError(
                f"metrics.judge.rubrics: unknown rubric {rubric!r} "
                f"(predefined: {', '.join(PREDEFINED_RUBRICS)}; or give a mapping with name and {', '.join(RUBRIC_FIELDS)})"
            )
        return rubric, load_rubric(rubric, "absolute")
    missing = [key for key in ("name", *RUBRIC_FIELDS) if not rubric.get(key)]
    if missing:
        raise JudgeConfigError(f"metrics.judge.rubrics: rubric {rubric.get('name', '?')!r} lacks {', '.join(missing)}")
    return rubric["name"], SCORE_RUBRIC_TEMPLATE.format(**{key: rubric[key] for key in RUBRIC_FIELDS})


def judge_prompt(instruction: str, response: str, reference: str, rubric: str) -> str:
    """prometheus-eval's absolute grading prompt with a reference answer (the user turn; ABS_SYSTEM_PROMPT is the system turn)."""
    return ABSOLUTE_PROMPT.format(instruction=instruction, response=response, reference_answer=reference, rubric=rubric)


def parse_verdict(output: str | None) -> tuple[int | None, str | None]:
    """(score 1-5, feedback) by prometheus-eval's absolute parser, or (None, None) when it rejects the output.

    The parser only accepts a score at the very end of the output, and only 1-5. It returns
    the whole output as "feedback"; the feedback proper is what precedes the last [RESULT].
    """
    _, score = parse_output(output, mode="absolute")
    if score is None:
        return None, None
    assert output is not None  # the parser gave a score
    head = re.split(r"\[RESULT\]", output, flags=re.IGNORECASE)
    return int(score), (head[-2] if len(head) > 1 else output).strip()


@dataclass(frozen=True)
class Verdict:
    score: float  # 1-5, NaN unless status is ok
    status: str  # ok | parse_error
    attempts: int
    feedback: str | None = None
    output: str | None = None  # the judge's last raw output


def grade_with_retries(prompts: Sequence[str], generate: Generate, retries: int) -> list[Verdict]:
    """Ask the judge; re-ask only the unparseable prompts, at most `retries` more times."""
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    verdicts: list[Verdict | None] = [None] * len(prompts)
    pending = list(range(len(prompts)))
    last_outputs: dict[int, str] = {}
    for attempt in range(retries + 1):
        if not pending:
            break
        outputs = generate([prompts[i] for i in pending], attempt)
        if len(outputs) != len(pending):
            raise ValueError(f"judge returned {len(outputs)} outputs for {len(pending)} prompts")
        still_pending = []
        for i, output in zip(pending, outputs):
            score, feedback = parse_verdict(output)
            if score is None:
                still_pending.append(i)
                last_outputs[i] = output
            else:
                verdicts[i] = Verdict(float(score), "ok", attempt + 1, feedback, output)
        pending = still_pending
    for i in pending:
        verdicts[i] = Verdict(math.nan, "parse_error", retries + 1, None, last_outputs.get(i))
    return verdicts  # type: ignore[return-value]


def judge_settings(options: dict) -> dict:
    """metrics.judge with the schema's defaults (prometheus-eval's) for what it leaves out."""
    return with_schema_defaults({key: value for key, value in options.items() if value is not None}, "metrics.judge")


def backend_generate(backend: Backend, settings: dict, steps: dict | None = None) -> Generate:
    """Each attempt samples with seed + attempt: a retry with the first attempt's seed would repeat its output.
    `steps`: where the verdicts' top log-probabilities go, by (prompt, verdict) (a judge without prompt
    log-probabilities whose API returns them: careval.metrics.judge_distribution.top_distribution)."""

    def generate(prompts: list[str], attempt: int) -> list[str]:
        sampling = Sampling(
            max_new_tokens=settings["max_new_tokens"],
            temperature=settings["temperature"],
            top_p=settings["top_p"],
            seed=settings["seed"] + attempt,
        )
        if steps is None:
            return backend.generate(prompts, sampling)
        replies = backend.generate_top_logprobs(prompts, sampling, len(SCORES))
        for prompt, (output, top) in zip(prompts, replies):
            steps[(prompt, output)] = top
        return [output for output, _ in replies]

    return generate


def score_judge(
    backend: Backend,
    samples: pl.DataFrame,
    generations: pl.DataFrame,
    options: dict,
    request_batch: int | None = None,
) -> pl.DataFrame:
    """Two rows per judged sample and rubric (judge_<rubric>, judge_<rubric>_expected), in JUDGE_SCORE_SCHEMA.

    Only the first `limit` generations are judged (all when limit is null). A generation that
    is not ok keeps its status and NaN; a sample without a reference answer is `no_reference`.
    The answers are graded in batches of `request_batch` (all at once where None; careval.batches): each batch's
    verdicts (with their retries), then its score distributions. A job's backend loads its model on its first
    call (careval.backends.cached): none when nothing is to be graded.
    """
    settings = judge_settings(options)
    rubrics = [rubric_text(r) for r in settings["rubrics"]]
    if settings["limit"]:
        generations = generations.head(settings["limit"])
    references = dict(zip(samples["id"], samples["reference"]))
    retries = settings["retries"]
    if settings["temperature"] == 0 and retries:
        # Greedy decoding answers a retry exactly as before: asking again only costs time.
        print(f"judge: greedy decoding (temperature 0), so the {retries} retries are skipped")
        retries = 0

    rows: list[dict] = []
    prompts: list[str] = []
    graded: list[int] = []  # index in rows of each prompt's judge_<rubric> row (its _expected row follows)
    for record in generations.iter_rows(named=True):
        reference = references.get(record["id"])
        status = record["status"]
        if status == "ok" and not (reference and reference.strip()):
            status = "no_reference"
        for name, text in rubrics:
            if status == "ok":
                graded.append(len(rows))
                prompts.append(judge_prompt(record["prompt"], record["output"], reference or "", text))  # ok: non-empty
            for metric in (metric_name(name), expected_metric_name(name)):
                rows.append(
                    {
                        "id": record["id"],
                        "metric": metric,
                        "value": math.nan,
                        "status": status,
                        "level": "sample",
                        "weight": 1.0,
                    }
                )

    if prompts:
        verdicts, distributions = grade_in_batches(backend, prompts, settings, retries, request_batch, len(rubrics))
        for index, verdict, probs in zip(graded, verdicts, distributions):
            grade, expected = rows[index], rows[index + 1]
            if verdict.status == "ok":
                grade.update(value=verdict.score, status="ok")
            elif probs is not None:
                grade.update(value=float(most_likely(probs)), status="from_distribution")
            else:
                grade.update(value=math.nan, status="parse_error")
            if probs is None:
                expected.update(status="no_logprobs")
            else:
                expected.update(value=expected_score(probs), status="ok")
                for row in (grade, expected):
                    row.update(zip(JUDGE_PROBABILITY_COLUMNS, probs))
        for name, _ in rubrics:
            mine = [(i, v) for i, v in zip(graded, verdicts) if rows[i]["metric"] == metric_name(name)]
            print(
                f"judge: {metric_name(name)}: statuses {dict(Counter(rows[i]['status'] for i, _ in mine))}, "
                f"attempts used {dict(sorted(Counter(v.attempts for _, v in mine).items()))}; "
                f"{expected_metric_name(name)}: statuses {dict(Counter(rows[i + 1]['status'] for i, _ in mine))}"
            )
        failed = next((v.output for v in verdicts if v.status == "parse_error"), None)
        if failed is not None:
            print(f"judge: e.g. an unparseable verdict (its end): {failed[-300:]!r}")
    # the judge_<rubric> rows (every other row) of answers never sent to the judge
    skipped = Counter(row["status"] for row in rows[::2] if row["status"] not in JUDGE_VERDICT_STATUSES)
    if skipped:
        print(f"judge: not graded (verdicts per status): {dict(skipped)}")
    return pl.DataFrame(rows, schema=JUDGE_SCORE_SCHEMA)


def grade_in_batches(
    backend: Backend, prompts: list[str], settings: dict, retries: int, request_batch: int | None, per_sample: int
) -> tuple[list[Verdict], list[list[float] | None]]:
    """Each prompt's verdict and score distribution (None without log-probabilities), batch after batch of
    `request_batch` samples' prompts (`per_sample` each, one per rubric; identical prompts in one batch)."""
    batches = (
        batches_keeping_duplicates(prompts, request_batch * per_sample)
        if request_batch
        else [list(range(len(prompts)))]
    )
    verdicts: list[Verdict] = [Verdict(math.nan, "parse_error", 0)] * len(prompts)
    distributions: list[list[float] | None] = [None] * len(prompts)
    graded = scored = 0.0
    # a judge without prompt log-probabilities reads its distribution from its verdicts' top log-probabilities
    from_top = not backend.capabilities.prompt_logprobs and backend.capabilities.top_logprobs
    for batch in batches:
        start = time.perf_counter()
        steps: dict | None = {} if from_top else None
        batch_prompts = [prompts[i] for i in batch]
        batch_verdicts = grade_with_retries(batch_prompts, backend_generate(backend, settings, steps), retries)
        graded += time.perf_counter() - start
        start = time.perf_counter()
        if steps is not None:
            batch_distributions = [
                top_distribution(steps.get((prompt, v.output), [])) for prompt, v in zip(batch_prompts, batch_verdicts)
            ]
        else:
            batch_distributions = score_distributions(backend, batch_prompts, [v.output for v in batch_verdicts])
        scored += time.perf_counter() - start
        for k, i in enumerate(batch):
            verdicts[i] = batch_verdicts[k]
            distributions[i] = batch_distributions[k] if batch_distributions is not None else None
    print(f"judge: graded {len(prompts)} prompts in {len(batches)} batch(es), {graded:.1f}s")
    if from_top:
        print(
            f"judge: read the score distribution of {len(prompts)} verdicts from their top log-probabilities "
            "(a verdict without them: no_logprobs)"
        )
    elif not backend.capabilities.prompt_logprobs:
        print(
            f"judge: {backend.name} gives no log-probabilities: unparseable verdicts "
            "stay parse_error and the expected scores no_logprobs"
        )
    else:
        print(f"judge: read the score distribution of {len(prompts)} verdicts in {scored:.1f}s")
    return verdicts, distributions


def judge_model_spec(spec):
    """The judge's careval.models.spec.ModelSpec with prometheus-eval's absolute-grading system prompt
    (ABS_SYSTEM_PROMPT) unless the entry sets its own."""
    return replace(spec, system_prompt=spec.system_prompt or ABS_SYSTEM_PROMPT)
