#!/usr/bin/env bash
# Validates the JUnit XML that `retrysim gate` writes against a published
# JUnit schema: Jenkins' junit-10.xsd, as the pytest source distribution
# ships it for its own tests (testing/example_scripts/junit-10.xsd). It runs
# the gate of deploy/ci/ twice on the HotOS toy, with a passing and a
# failing configuration, checks the exit statuses (0 and 3) and validates
# both files with the `xmlschema` package.
#
#   scripts/check-junit.sh [RETRYSIM]   (default: target/release/retrysim)
#
# Needs python3 with venv and pip, and the Python package index; it works in
# a temporary folder and leaves nothing behind.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$repo/target/release/retrysim}
[ -x "$bin" ] || { echo "no retrysim at $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q xmlschema==4.3.2 elementpath==5.1.4
"$work/venv/bin/pip" download -q --no-deps --no-binary :all: pytest==8.3.4 -d "$work"
tar -xzf "$work/pytest-8.3.4.tar.gz" -C "$work" pytest-8.3.4/testing/example_scripts/junit-10.xsd
xsd=$work/pytest-8.3.4/testing/example_scripts/junit-10.xsd

gate() {
    local config=$1 name=$2 want=$3 got=0
    "$bin" gate "$repo/scenarios/hotos21-toy.json" --set traffic.rate=100 \
        --config "$config" \
        --fail-on metastable --min-margin 1.5 --max-amplification 3 --max-drain 10m \
        --junit "$work/$name.xml" --markdown "$work/$name.md" -q || got=$?
    if [ "$got" != "$want" ]; then
        echo "$name: gate exited $got, expected $want" >&2
        exit 1
    fi
    echo "$name: gate exited $got as expected"
}
gate "$repo/examples/service_config.json" pass 0
gate "$repo/tests/good/gate/storm-service-config.json" fail 3

"$work/venv/bin/python" - "$xsd" "$work/pass.xml" "$work/fail.xml" <<'EOF'
import sys
import xmlschema

schema = xmlschema.XMLSchema(sys.argv[1])
for path in sys.argv[2:]:
    schema.validate(path)
    print(f"{path.rsplit('/', 1)[-1]}: valid against junit-10.xsd")
EOF
