"""The lm_eval family: an lm-eval task's own metrics of careval's responses, per document, as lm-eval computes them.

The scoring job builds the benchmark's lm-eval tasks again (careval.datasets.lm_eval_tasks.load_tasks), gives each
document's requests careval's responses (log-likelihoods, generations) in lm-eval's shape, runs the task's filters
(Task.apply_filters) and its process_results per document and filter, as lm-eval's evaluator does. Each metric is
written under lm_eval_metric_name: a per-document number is a sample row; where lm-eval aggregates other than by
the mean, the corpus value is lm-eval's aggregation of the documents' values (and the perplexities' sample rows are
those careval's perplexity family writes: their registry average gives that corpus value back).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from numbers import Number
from typing import Any

import polars as pl

from careval.datasets.lm_eval_tasks import GREEDY_METRICS, lm_eval_meta, load_tasks
from careval.metrics.registry import lm_eval_metric_name
from careval.schemas import SCORE_SCHEMA


def _responses(sample: dict, meta: dict, generations: dict[str, str], logliks: dict, greedy: dict) -> list | None:
    """Each request's response as lm-eval's model returns it: (loglik, is_greedy), a rolling loglik, or the text;
    None where careval has none (a non-finite log-likelihood, a missing generation). An is_greedy careval did not
    compute is None (lm-eval's metrics that read it are then not scored: _task_rows)."""
    output_type, sample_id = meta["output_type"], sample["id"]
    if output_type == "generate_until":
        text = generations.get(sample_id)
        return None if text is None else [text]
    values = [logliks.get((sample_id, index)) for index in range(len(meta["requests"]))]
    if any(value is None or not math.isfinite(value) for value in values):
        return None
    if output_type == "loglikelihood_rolling":
        return values
    flags = [greedy.get((sample_id, index), math.nan) for index in range(len(values))]
    return [(value, None if math.isnan(flag) else flag == 1.0) for value, flag in zip(values, flags)]


def _sample_values(aggregation: str, items: list) -> list[tuple[float, float]] | None:
    """(value, weight) per document where lm-eval's per-document values are numbers careval can average to its
    aggregation (the registry's average of the metric); None otherwise (only the corpus value then)."""
    if aggregation == "perplexity":  # exp(-mean ll): the geometric mean of exp(-ll)
        return [(math.exp(-ll), 1.0) for ll in items]
    if aggregation == "weighted_perplexity":  # exp(-sum ll / sum n): the n-weighted geometric mean of exp(-ll / n)
        return [(math.exp(-ll / n), float(n)) for ll, n in items]
    if aggregation == "bits_per_byte":  # -sum ll / sum n / ln 2: the n-weighted mean of -ll / n / ln 2
        return [(-ll / n / math.log(2), float(n)) for ll, n in items]
    if all(isinstance(item, Number) and not isinstance(item, complex) for item in items):
        return [(float(item), 1.0) for item in items]  # pyright: ignore[reportArgumentType]  (a real number)
    return None


def _aggregation_name(task: Any, metric: str) -> tuple[str, Any]:
    """lm-eval's aggregation of a metric (its registered name, and the function; the mean where none is set)."""
    from lm_eval.api import metrics as lm_metrics

    function = task.aggregation().get(metric, lm_metrics.mean)
    names = {
        lm_metrics.mean: "mean",
        lm_metrics.perplexity: "perplexity",
        lm_metrics.weighted_perplexity: "weighted_perplexity",
        lm_metrics.bits_per_byte: "bits_per_byte",
    }
    return names.get(function, getattr(function, "__name__", "other")), function


def score_lm_eval(
    samples: pl.DataFrame, generations: pl.DataFrame | None, logliks: pl.DataFrame | None, options: dict, min_chars=1
) -> pl.DataFrame:
    """Score rows of the lm_eval family (SCORE_SCHEMA) of one model on one lm-eval benchmark."""
    from lm_eval.api.instance import Instance

    texts = dict(zip(generations["id"], generations["output"])) if generations is not None else {}
    values: dict[tuple[str, int], float] = {}
    greedy: dict[tuple[str, int], float] = {}
    if logliks is not None:
        for row in logliks.iter_rows(named=True):
            if row["kind"] in ("option", "continuation", "reference"):
                values[(row["id"], row["option"])] = row["loglik"]
            elif row["kind"] == "greedy":
                greedy[(row["id"], row["option"])] = row["loglik"]
    by_task: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for sample in samples.iter_rows(named=True):
        meta = lm_eval_meta(sample)
        by_task[meta["task"]].append((sample, meta))
    first = json.loads(samples["meta"][0])["lm_eval"] if samples.height else {}
    tasks = load_tasks(first["source"], first["include"]) if samples.height else {}
    rows: list[dict] = []
    for name, members in by_task.items():
        task = tasks[name]
        docs = task.eval_docs
        instances, failed, unknown_greedy = [], [], set()
        for sample, meta in members:
            responses = _responses(sample, meta, texts, values, greedy)
            if responses is None:
                failed.append(sample["id"])
                continue
            if any(isinstance(response, tuple) and response[1] is None for response in responses):
                unknown_greedy.add(sample["id"])
                responses = [(response[0], False) for response in responses]
            doc = docs[meta["doc_id"]]
            for index, (arguments, response) in enumerate(zip(meta["requests"], responses)):
                instance = Instance(
                    request_type=_request_type(meta["output_type"]),
                    doc=doc,
                    arguments=tuple(arguments),
                    idx=index,
                    metadata=(name, meta["doc_id"], 1),
                )
                instance.resps.append(response)
                instance.sample_id = sample["id"]  # pyright: ignore[reportAttributeAccessIssue]  (careval's id)
                instances.append(instance)
        task._instances = instances
        not_greedy = GREEDY_METRICS.get(members[0][1]["output_type"], ())
        rows += _task_rows(task, instances, failed, {(i, m) for i in unknown_greedy for m in not_greedy})
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)


def _request_type(output_type: str) -> Any:
    """The request type lm-eval's Instance holds (a multiple-choice task's choices are loglikelihood requests)."""
    return "loglikelihood" if output_type == "multiple_choice" else output_type


def _task_rows(task: Any, instances: list, failed: list[str], unscored: set[tuple[str, str]]) -> list[dict]:
    """process_results per document and filter, as lm-eval's evaluator; each metric's sample and corpus rows.
    `failed`: documents without a response; `unscored`: (document, lm-eval metric) pairs whose value would read an
    is_greedy careval did not compute (status no_greedy_flag, left out of the corpus value)."""
    if instances:
        task.apply_filters()
    by_doc: dict[str, list] = defaultdict(list)
    for instance in instances:
        by_doc[instance.sample_id].append(instance)
    items: dict[str, list[tuple[str, Any]]] = defaultdict(list)  # metric name -> (sample id, lm-eval's value)
    metric_of: dict[str, str] = {}  # name -> lm-eval's metric
    rows = []
    for filter_key in instances[0].filtered_resps if instances else []:
        for sample_id, requests in by_doc.items():
            requests.sort(key=lambda instance: instance.idx)
            results = task.process_results(requests[0].doc, [r.filtered_resps[filter_key] for r in requests])
            for metric, value in results.items():
                name = lm_eval_metric_name(metric, filter_key)
                metric_of[name] = metric
                if (sample_id, metric) in unscored:
                    rows.append(_failed(sample_id, name, "no_greedy_flag"))
                else:
                    items[name].append((sample_id, value))
    for name, scored in items.items():
        aggregation, function = _aggregation_name(task, metric_of[name])
        values = [value for _, value in scored]
        per_sample = _sample_values(aggregation, values)
        if per_sample is not None:
            rows += [
                {"id": i, "metric": name, "value": v, "status": "ok", "level": "sample", "weight": w}
                for (i, _), (v, w) in zip(scored, per_sample)
            ]
        if aggregation != "mean" or per_sample is None:
            rows.append(
                {"id": None, "metric": name, "value": float(function(values)), "status": "ok", "level": "corpus",
                 "weight": 1.0}
            )  # fmt: skip
    # every metric the task computes (lm-eval's metric_list under each filter), whether or not a document had it
    names = [lm_eval_metric_name(m, f.name) for f in task._filters for m in task._metric_fn_list] + list(metric_of)
    rows += [_failed(i, name, "no_response") for i in failed for name in dict.fromkeys(names)]
    return rows


def _failed(sample_id: str, name: str, status: str) -> dict:
    return {"id": sample_id, "metric": name, "value": float("nan"), "status": status, "level": "sample", "weight": 1.0}
