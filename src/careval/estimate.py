"""`careval estimate`: what a config's served models (`endpoint:` entries) will be sent, before anything is sent.

Per served model (evaluated, the judge, the rephraser) and benchmark: the requests its jobs send, their prompt tokens
and the most they may generate, and with a `price` what that costs at most; then the model's total beside its
`max_cost` and what its ledger records as spent already. Counted from the plan (careval.plan: the benchmarks and
families each model runs) and the benchmarks' normalised samples where they exist (results of `snakemake
<datasets_dir>/<benchmark>.parquet`, which needs no model): their rows, their prompts and options. A benchmark not
normalised yet counts its `limit`, else `samples` rows, and `prompt_tokens` per prompt; those numbers are marked
with "~". Tokens are counted as a prompt's characters / 4 (the usual rate of English text under BPE tokenizers):
an estimate, not the server's count. Requests the request cache already holds are counted too (the estimate sends
nothing to find out): it is what a run from an empty cache costs, at most.

A dry run (`snakemake -n`) prints one line per served model (:func:`summary`, the Snakefile), the totals of the same
count with the default `--samples` and `--prompt-tokens`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from careval.inference import loglik_requests
from careval.models.spec import ModelSpec
from careval.plan import Plan
from careval.tasks import open as open_task

CHARS_PER_TOKEN = 4
JUDGE_TEMPLATE_TOKENS = 420  # prometheus-eval's absolute prompt and system prompt, without the three texts


@dataclass
class Line:
    benchmark: str
    role: str  # evaluated | judge | rephraser
    requests: int
    prompt_tokens: int
    generated_tokens: int  # at most
    assumed: bool  # samples or prompt lengths assumed (not normalised yet)


def _tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def _samples(plan: Plan, benchmark: str, samples: int) -> tuple[pl.DataFrame | None, int, bool]:
    path = Path(plan.datasets_dir) / f"{benchmark}.parquet"
    if path.exists():
        frame = pl.read_parquet(path)
        return frame, frame.height, False
    return None, plan.limits[benchmark] or samples, True


def lines_of(plan: Plan, name: str, spec: ModelSpec, samples: int, prompt_tokens: int) -> list[Line]:
    """The requests of served model `name` (evaluated, and/or the judge, the rephraser) under `plan`."""
    lines = []
    generation = plan.config["generation"]
    logprobs = (spec.endpoint or {}).get("api") == "completions"
    for benchmark, entry in plan.benchmarks.items():
        frame, n, assumed = _samples(plan, benchmark, samples)
        if name in plan.models:
            requests = prompt = generated = 0
            if entry.generates:
                if frame is not None:
                    prompts = open_task.generation_prompts(frame, entry.prompt)
                    prompt += sum(_tokens(p) for p in prompts)
                else:
                    prompt += n * prompt_tokens
                requests += n
                generated += n * (entry.max_new_tokens or generation["max_new_tokens"])
            if entry.computes_logliks and (logprobs or not entry.generates):
                if frame is not None:
                    scored = loglik_requests(frame, entry)
                    requests += scored.height
                    prompt += sum(_tokens(c) + _tokens(x) for c, x in zip(scored["context"], scored["continuation"]))
                else:
                    per = 2 if entry.generates else 4  # a reference twice (perplexity), or four options
                    requests += n * per
                    prompt += n * per * prompt_tokens
            if benchmark in plan.analysis.consistency_benchmarks:
                r = plan.config["analysis"]["consistency"]["r"]
                kept = min(n, plan.config["analysis"]["consistency"]["limit"] or n)
                requests += kept * r
                prompt += kept * r * prompt_tokens
                generated += kept * r * (entry.max_new_tokens or generation["max_new_tokens"])
            if requests:
                lines.append(Line(benchmark, "evaluated", requests, prompt, generated, assumed))
        judged = [spec_.name for spec_ in (plan.judge, *plan.judges.values()) if spec_ is not None]
        if name in judged and "judge" in plan.families(benchmark):
            judge = plan.family_options("judge").options
            rubrics = len(judge.get("rubrics") or [1])
            limit = judge.get("limit") or n
            graded = min(n, limit) * rubrics * len(plan.models)
            most = int(judge.get("max_new_tokens") or 1024)
            answer = entry.max_new_tokens or generation["max_new_tokens"]
            lines.append(
                Line(
                    benchmark,
                    "judge",
                    graded,
                    graded * (JUDGE_TEMPLATE_TOKENS + prompt_tokens + 2 * answer),
                    graded * most,
                    True,
                )
            )
        if (
            plan.rephraser is not None
            and name == plan.rephraser.name
            and benchmark in plan.analysis.resilience_benchmarks
        ):
            settings = plan.config["analysis"]["resilience"]
            kept = min(n, settings["limit"] or n) * len(plan.models)
            answer = entry.max_new_tokens or generation["max_new_tokens"]
            lines.append(
                Line(
                    benchmark,
                    "rephraser",
                    kept * settings["k"],
                    kept * settings["k"] * 2 * answer,
                    kept * settings["k"] * answer,
                    True,
                )
            )
    return lines


def served_models(plan: Plan) -> dict[str, ModelSpec]:
    """Every served model (an `endpoint:` entry) a job of the plan sends requests to, by name."""
    specs = [*plan.models.values(), plan.judge, *plan.judges.values(), plan.rephraser]
    return {s.name: s for s in specs if s is not None and s.backend == "openai" and s.endpoint.get("ledger")}


def _spent(path: str) -> float:
    total = 0.0
    try:
        for line in Path(path).read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            total += float(event.get("cost") or 0.0) if "paid" in event else 0.0
    except OSError:
        return 0.0
    return total


def dry_run(argv: list[str]) -> bool:
    """Whether a snakemake command line is a dry run (-n, --dry-run, --dryrun, or -n among short flags: -np)."""
    for arg in argv[1:]:
        if arg in ("--dry-run", "--dryrun", "--dry-run=True", "--dryrun=True"):
            return True
        if arg.startswith("-") and not arg.startswith("--") and arg[1:].isalpha() and "n" in arg[1:]:
            return True
    return False


def summary(plan: Plan, samples: int = 1000, prompt_tokens: int = 300) -> list[str]:
    """One line per served model: its requests, prompt tokens, most generated tokens and most cost over the plan."""
    out = []
    for name, spec in served_models(plan).items():
        endpoint, price = spec.endpoint, spec.endpoint.get("price")
        lines = lines_of(plan, name, spec, samples, prompt_tokens)
        requests, prompt, generated = (
            sum(getattr(x, k) for x in lines) for k in ("requests", "prompt_tokens", "generated_tokens")
        )
        mark = "~" if any(x.assumed for x in lines) else ""
        most = (prompt * price["input_per_mtok"] + generated * price["output_per_mtok"]) / 1e6 if price else None
        money = f", at most {mark}{most:.2f}" if most is not None else ", no price"
        budget = ""
        if endpoint.get("max_cost"):
            over = (
                ": more than max_cost, its jobs stop there" if most is not None and most > endpoint["max_cost"] else ""
            )
            budget = f" (max_cost {endpoint['max_cost']:g}, spent {_spent(endpoint['ledger']):.4f}{over})"
        out.append(
            f"{name} ({endpoint.get('api', 'chat')} API of {spec.path}): {mark}{requests} requests, {mark}{prompt} prompt "
            f"tokens, at most {mark}{generated} generated{money}{budget}"
        )
    return out


def estimate(plan: Plan, samples: int = 1000, prompt_tokens: int = 300) -> list[str]:
    """The estimate's lines (the module docstring)."""
    served = served_models(plan)
    if not served:
        return ["no served model (an `endpoint:` entry) in this config: nothing is sent to an API"]
    out = []
    for name, spec in served.items():
        endpoint = spec.endpoint
        price = endpoint.get("price")
        per = (
            f"price {price['input_per_mtok']:g} / {price['output_per_mtok']:g} per million tokens"
            if price
            else "no price"
        )
        budget = (
            f", max_cost {endpoint['max_cost']:g} (spent so far {_spent(endpoint['ledger']):.4f})"
            if endpoint.get("max_cost")
            else ""
        )
        out.append(
            f"{name}: the {endpoint.get('api', 'chat')} API of {spec.path} at {endpoint.get('base_url') or 'the default base_url'}; {per}{budget}"
        )
        out.append(
            f"  {'benchmark':32} {'role':10} {'requests':>10} {'prompt tokens':>14} {'generated (at most)':>20} {'cost (at most)':>15}"
        )
        totals = [0, 0, 0, 0.0]
        for line in lines_of(plan, name, spec, samples, prompt_tokens):
            cost = (
                (line.prompt_tokens * price["input_per_mtok"] + line.generated_tokens * price["output_per_mtok"]) / 1e6
                if price
                else None
            )
            mark = "~" if line.assumed else ""
            shown = f"{mark}{cost:.2f}" if cost is not None else "-"
            out.append(
                f"  {line.benchmark:32} {line.role:10} {mark + str(line.requests):>10} "
                f"{mark + str(line.prompt_tokens):>14} {mark + str(line.generated_tokens):>20} {shown:>15}"
            )
            totals[0] += line.requests
            totals[1] += line.prompt_tokens
            totals[2] += line.generated_tokens
            totals[3] += cost or 0.0
        money = f"{totals[3]:.2f}" if price else "-"
        out.append(f"  {'total':32} {'':10} {totals[0]:>10} {totals[1]:>14} {totals[2]:>20} {money:>15}")
        if price and endpoint.get("max_cost") and totals[3] > endpoint["max_cost"]:
            out.append(
                f"  at most {totals[3]:.2f} may be spent, more than max_cost {endpoint['max_cost']:g}: its jobs stop there"
            )
    out.append(
        "(~: a benchmark not normalised yet: its limit, else the assumed samples, and assumed prompt lengths; tokens "
        f"are characters / {CHARS_PER_TOKEN}; generated tokens are max_new_tokens, the most a request may generate)"
    )
    return out
