#!/bin/sh
# Regenerates the README images under docs/ from the scenarios, at
# 1200x700 so each file stays small (about 150 KB or less). The simulation
# and the plots are deterministic: running this again gives the same bytes.
#
#   scripts/make-doc-images.sh                 # docs/quick-*.png
#   scripts/make-doc-images.sh NAME SCENARIO   # docs/NAME-load.png, docs/NAME-recovery.png
#   scripts/make-doc-images.sh NAME SCENARIO WxH   # the same at another size
#
# Run from anywhere; builds the release binary if needed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$root/target}/release/retrysim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make() { # NAME SCENARIO_FILE [SIZE]
    "$bin" run "$2" -o "$tmp/$1" --quiet --plot-size "${3:-1200x700}"
    out=$(find "$tmp/$1" -name load.png -printf '%h\n' | head -n 1)
    mkdir -p docs
    cp "$out/load.png" "docs/$1-load.png"
    cp "$out/recovery.png" "docs/$1-recovery.png"
    ls -l "docs/$1-load.png" "docs/$1-recovery.png"
}

if [ $# -ge 2 ]; then
    make "$1" "$2" "${3:-1200x700}"
else
    make quick scenarios/quick-outage.json
fi
