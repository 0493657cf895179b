"""The `careval` command: check a config and print the plan it gives, without Snakemake or any model; look after
the request cache.

careval plan config/paper.yaml        # models (backend, GPUs, memory), benchmarks and their metric
                                      # families, the analyses and figures; exit 2 on a config error
careval estimate config/paper.yaml    # each served model's (endpoint:) expected requests, tokens and cost
careval cache stats                   # the request cache's entries, size and ages (resources.cache_dir of
                                      # config/config.yaml; --config another, --dir a folder)
careval cache prune --older-than 30d  # drop the entries no run used for 30 days; --max-size 50G: the least
                                      # recently used until the cache is that small
careval manifest diff A B             # what differs between two runs' results/manifest.json (the dates aside)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from careval.config import ConfigError, load_config, with_schema_defaults
from careval.inputs import check_input_files
from careval.models.spec import cache_dir
from careval.plan import Plan, load_plan
from careval.request_cache import RequestCache, parse_age, parse_size


def describe_plan(plan: Plan) -> list[str]:
    """The plan as lines a person reads before submitting a run."""
    lines = [f"results in {plan.results_dir}/ (logs in {plan.results_dir}/logs/)", "", f"models ({len(plan.models)}):"]
    for spec in plan.models.values():
        lines.append(
            f"  {spec.name}: {spec.backend}, {spec.path}, gpus={spec.gpus}, mem_mb={spec.mem_mb}, "
            f"runtime={spec.runtime} min, threads={spec.threads}"
        )
    careqa = [(f"careqa {step}", spec) for step, spec in plan.careqa_llms.items()]
    for role, spec in (("judge", plan.judge), ("resilience rephraser", plan.rephraser), *careqa):
        if spec is not None:
            lines.append(f"  {role}: {spec.describe()}")
    lines += ["", f"benchmarks ({len(plan.benchmarks)}):"]
    for name, entry in plan.benchmarks.items():
        limit = plan.limits[name]
        lines.append(
            f"  {name} [{entry.task}{', first ' + str(limit) if limit else ''}]: {', '.join(plan.families(name))}"
        )
    analysis = plan.analysis
    lines += [
        "",
        "analyses:",
        f"  resilience on: {', '.join(analysis.resilience_benchmarks) or 'off'}",
        f"  self-consistency on: {', '.join(analysis.consistency_benchmarks) or 'off'}",
        f"  figures ({len(analysis.figure_names())}): {', '.join(analysis.figure_names())}",
    ]
    if plan.elo_warning:
        lines.append(f"  warning: analysis.elo_csv: {plan.elo_warning}")
    lines += [f"  warning: {warning}" for warning in plan.warnings]
    return lines


def cache_folder(args: argparse.Namespace) -> Path:
    """--dir, else the config's request cache folder as its run reads it (careval.models.spec.cache_dir:
    resources.cache_dir, the schema's default where it sets none; none where resources.cache is false)."""
    if args.dir:
        return Path(args.dir)
    folder = cache_dir(with_schema_defaults(load_config(args.config).get("resources") or {}, "resources"))
    if folder is None:
        raise ValueError(f"{args.config}: resources.cache is false: its runs keep no request cache (--dir: a folder)")
    return Path(folder)


def cache_command(args: argparse.Namespace) -> int:
    try:
        folder = cache_folder(args)
        older = parse_age(args.older_than) if getattr(args, "older_than", None) is not None else None
        size = parse_size(args.max_size) if getattr(args, "max_size", None) is not None else None
    except ValueError as error:
        option = "--older-than" if "an age" in str(error) else "--max-size"
        print(f"careval cache prune: {option}: {error}", file=sys.stderr)
        return 2
    except (OSError, ConfigError) as error:
        print(f"careval cache: {error}", file=sys.stderr)
        return 2
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        print(f"careval cache: {folder} {what} (no request cache there; --dir or --config say which)", file=sys.stderr)
        return 2
    cache = RequestCache(folder)
    if args.action == "prune":
        if older is None and size is None:
            print("careval cache prune: say what to drop: --older-than 30d and/or --max-size 50G", file=sys.stderr)
            return 2
        removed, freed = cache.prune(older_than=older, max_bytes=size)
        print(f"{folder}: removed {removed} entries ({freed / 2**20:.1f} MB)")
    stats = cache.stats()
    ages = ""
    if stats.oldest is not None and stats.newest is not None:
        now = time.time()
        ages = f"; last used {(now - stats.newest) / 86400:.1f} to {(now - stats.oldest) / 86400:.1f} days ago"
    print(f"{folder}: {stats.entries} entries, {stats.bytes / 2**20:.1f} MB{ages}")
    return 0


def manifest_command(args: argparse.Namespace) -> int:
    """Print one line per difference; exit 0 when the runs match, 1 when they differ, 2 when a file is unreadable."""
    import json

    from careval.manifest import diff

    try:
        a, b = (json.loads(Path(path).read_text()) for path in (args.a, args.b))
    except (OSError, ValueError) as error:
        print(f"careval manifest: cannot read a manifest: {error}", file=sys.stderr)
        return 2
    lines = diff(a, b)
    print("\n".join(lines) if lines else "the two runs' manifests match (dates aside)")
    return 1 if lines else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="careval", description=(__doc__ or "").split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    plan_parser = commands.add_parser("plan", help="validate a config and print its plan")
    plan_parser.add_argument("config", help="a careval config file, e.g. config/config.yaml")
    estimate_parser = commands.add_parser(
        "estimate", help="each served model's expected requests, tokens and cost, before anything is sent"
    )
    estimate_parser.add_argument("config", help="a careval config file")
    estimate_parser.add_argument("--samples", type=int, default=1000, help="rows of a benchmark not normalised yet")
    estimate_parser.add_argument("--prompt-tokens", type=int, default=300, help="tokens of such a benchmark's prompt")
    cache_parser = commands.add_parser("cache", help="the request cache's size, or drop old entries")
    cache_parser.add_argument("action", choices=("stats", "prune"))
    where = cache_parser.add_mutually_exclusive_group()
    where.add_argument("--config", default="config/config.yaml", help="the config whose resources.cache_dir it is")
    where.add_argument("--dir", help="the cache folder itself")
    cache_parser.add_argument("--older-than", help="prune: entries unused for this long (30d, 12h, 45m, 90s: a unit)")
    cache_parser.add_argument(
        "--max-size", help="prune: then the least recently used until this size (50G, 500M, 64K, 100B: a unit)"
    )
    manifest_parser = commands.add_parser("manifest", help="what differs between two runs' manifests")
    manifest_parser.add_argument("action", choices=("diff",))
    manifest_parser.add_argument("a", help="a results/manifest.json")
    manifest_parser.add_argument("b", help="another results/manifest.json")
    args = parser.parse_args(argv)
    if args.command == "manifest":
        return manifest_command(args)
    if args.command == "cache":
        return cache_command(args)
    try:
        plan = load_plan(args.config)
        check_input_files(plan)
    except OSError as error:
        print(f"careval config error: {args.config}: cannot read it ({error.strerror})", file=sys.stderr)
        return 2
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        print(f"careval config error: {args.config}: not valid YAML{where}", file=sys.stderr)
        return 2
    except ConfigError as error:
        print(f"careval config error: {args.config}: {error}", file=sys.stderr)
        return 2
    if args.command == "estimate":
        from careval.estimate import estimate

        print("\n".join(estimate(plan, args.samples, args.prompt_tokens)))
        return 0
    print("\n".join(describe_plan(plan)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
