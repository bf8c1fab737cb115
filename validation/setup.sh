#!/usr/bin/env bash
# One-time setup of the real-client check: a virtual environment in validation/.venv
# with the pinned client libraries. Needs python3 (3.9 or newer) with the venv module.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
"$python" -m venv "$here/.venv"
"$here/.venv/bin/python" -m pip install --quiet --upgrade pip
"$here/.venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$here/.venv/bin/python" -c 'import grpc, botocore, numpy, matplotlib; print("validation/.venv ready: grpcio", grpc.__version__, "botocore", botocore.__version__)'
