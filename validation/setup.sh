#!/usr/bin/env bash
# One-time setup of the real-client check: a virtual environment in validation/.venv
# with the pinned client libraries. Needs python3 (3.11 or newer: the pinned numpy and
# matplotlib need it) with the venv module; PYTHON=/path/to/python3 picks another one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  found="$("$python" --version 2>/dev/null || echo "no $python")"
  echo "validation/setup.sh needs Python 3.11 or newer (the pinned numpy and matplotlib do); found: $found." >&2
  echo "Set PYTHON=/path/to/python3.11 (or newer) and run it again." >&2
  exit 2
fi
# The marker goes last: run.sh refuses a .venv that a failed setup left half built.
rm -f "$here/.venv/ready"
"$python" -m venv "$here/.venv"
"$here/.venv/bin/python" -m pip install --quiet --upgrade pip
"$here/.venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$here/.venv/bin/python" -c 'import grpc, botocore, numpy, matplotlib; print("validation/.venv ready: grpcio", grpc.__version__, "botocore", botocore.__version__)'
touch "$here/.venv/ready"
