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
if [ ! -e "$here/.venv/ready" ]; then
  echo "validation/.venv is incomplete (validation/setup.sh did not finish): run validation/setup.sh again" >&2
  exit 2
fi
export RETRYSIM="${RETRYSIM:-$(cd "$here/.." && pwd)/target/release/retrysim}"
exec "$here/.venv/bin/python" "$here/run.py" "$@"
