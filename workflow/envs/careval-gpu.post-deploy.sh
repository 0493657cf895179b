#!/usr/bin/env bash
# Snakemake (`--sdm conda`) runs this once inside the new environment, from the workflow's directory (the
# checkout): it installs careval itself, its dependencies being the environment file's pins (hence --no-deps).
# Editable, so the jobs run the checkout's src/careval and a code change needs no rebuild.
# CAREVAL_SRC points at the checkout where the run's working directory is elsewhere (--directory).
set -euo pipefail
src=${CAREVAL_SRC:-$PWD}
if ! grep -q '^name = "careval"' "$src/pyproject.toml" 2>/dev/null; then
    echo "careval post-deploy: $src is not the careval checkout; set CAREVAL_SRC to it" >&2
    exit 1
fi
python -m pip install --quiet --no-deps --no-build-isolation -e "$src"
