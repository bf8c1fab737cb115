#!/usr/bin/env bash
# Runs the real-client check: validation/run.sh [EXPERIMENT...] [--docs] [--report-only] [--sim-only]
# (default: every experiment; about 2.5 minutes each with RUNS=3). Needs validation/setup.sh first
# and a retrysim release binary (RETRYSIM, default target/release/retrysim).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ]; then
  echo "validation/.venv is missing: run validation/setup.sh first" >&2
  exit 2
fi
export RETRYSIM="${RETRYSIM:-$here/../target/release/retrysim}"
exec "$here/.venv/bin/python" "$here/run.py" "$@"
