"""The `careval` command: check a config and print the plan it gives, without Snakemake or any model.

careval plan config/paper.yaml        # models (backend, GPUs, memory), benchmarks and their metric
                                      # families, the analyses and figures; exit 2 on a config error
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import yaml

from careval.config import ConfigError
from careval.inputs import check_input_files
from careval.plan import Plan, load_plan


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="careval", description=(__doc__ or "").split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    plan_parser = commands.add_parser("plan", help="validate a config and print its plan")
    plan_parser.add_argument("config", help="a careval config file, e.g. config/config.yaml")
    args = parser.parse_args(argv)
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
    print("\n".join(describe_plan(plan)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
