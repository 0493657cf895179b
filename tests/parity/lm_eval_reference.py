"""lm-eval's own reading of its MCQA task files (lm-eval 0.4.13), for the parity tests.

The prompt lm-eval scores for a zero-shot multiple_choice task is `description + doc_to_text(doc)`
(ConfigurableTask.fewshot_context) and each choice is `target_delimiter + choice`
(construct_requests); doc_to_text / doc_to_choice are a !function, a Jinja template or a list.
`assert_same_documents` holds careval's requests, log-likelihoods, gold and per-sample scores against the
documents lm-eval logged (`log_samples`).
"""

from __future__ import annotations

import ast

import polars as pl
import pytest

from support.lm_eval_docs import task_file


def task_config(benchmark: str) -> dict:
    from lm_eval.tasks._yaml_loader import load_yaml

    return load_yaml(task_file(benchmark))


def _field(cfg: dict, key: str, doc: dict):
    from lm_eval.utils import apply_template

    value = cfg[key]
    if callable(value):
        return value(doc)
    if isinstance(value, str):
        return apply_template(value, doc)
    return value


def lm_eval_request(benchmark: str, doc: dict) -> tuple[str, list[str]]:
    """(context, continuations) lm-eval scores for `doc` of the benchmark's task, zero-shot."""
    from lm_eval.utils import apply_template

    cfg = task_config(benchmark)
    context = apply_template(cfg.get("description", ""), doc) + _field(cfg, "doc_to_text", doc)
    choices = _field(cfg, "doc_to_choice", doc)
    if isinstance(choices, str):  # a Jinja template renders the list as its repr (lm-eval literal_evals it)
        choices = ast.literal_eval(choices)
    return context, [cfg.get("target_delimiter", " ") + choice for choice in choices]


def lm_eval_target(benchmark: str, doc: dict) -> int:
    """The gold choice index as lm-eval's doc_to_target reads it (a field name, a template, a function)."""
    cfg = task_config(benchmark)
    spec = cfg["doc_to_target"]
    target = doc[spec] if isinstance(spec, str) and spec in doc else _field(cfg, "doc_to_target", doc)
    if isinstance(target, str) and not target.strip().isdigit():  # a choice's text (pubmedqa's "yes")
        return _field(cfg, "doc_to_choice", doc).index(target)
    return int(target)


def assert_same_documents(
    samples: pl.DataFrame,
    logliks: pl.DataFrame,
    scores: dict[tuple[str, str], float],
    logged: list[dict],
    metrics: tuple[str, ...],
    tolerance: float,
) -> float:
    """Document by document (lm-eval's doc_id = careval's row order): the same (context, continuation) requests,
    log-likelihoods within `tolerance`, the same gold and the same value of each of `metrics` (careval's `scores`:
    (id, metric) -> value). Returns the largest |delta loglik|, for the test's printed line."""
    assert len(logged) == samples.height
    worst = 0.0
    for position, (sample, doc) in enumerate(zip(samples.iter_rows(named=True), logged)):
        assert doc["doc_id"] == position
        mine = logliks.filter(pl.col("id") == sample["id"]).sort("option")
        # the request lm-eval scored: (context, target_delimiter + choice) per choice
        requests = list(zip(mine["context"], mine["continuation"]))
        assert [tuple(args) for args in doc["arguments"]] == requests, sample["id"]
        their_ll = [float(resp[0]) for resp in doc["filtered_resps"]]
        assert mine["loglik"].to_list() == pytest.approx(their_ll, abs=tolerance), sample["id"]
        worst = max(worst, max(abs(a - b) for a, b in zip(mine["loglik"], their_ll)))
        # lm-eval's target: the gold index, or the gold choice's text (pubmedqa's final_decision)
        target = doc["target"]
        if not isinstance(target, int):
            target = [args[1] for args in doc["arguments"]].index(" " + target)
        assert sample["answer"] == target, sample["id"]
        assert [scores[(sample["id"], metric)] for metric in metrics] == [doc[metric] for metric in metrics], sample[
            "id"
        ]
    return worst
