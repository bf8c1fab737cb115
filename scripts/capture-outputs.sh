#!/bin/sh
# Captures what retrysim writes for every shipped scenario, plus a sweep, a
# map, a tune, an assess and the schedule table, so that a refactoring can be
# checked byte for byte:
#
#   scripts/capture-outputs.sh target/release/retrysim /tmp/before
#   ... change the code, rebuild ...
#   scripts/capture-outputs.sh target/release/retrysim /tmp/after
#   diff -r -x perf.json /tmp/before /tmp/after
#
# Only perf.json (wall-clock timings) may differ between two captures. The
# parameters are small so the whole capture takes a few minutes on 2 cores.
set -eu
bin=${1:?usage: capture-outputs.sh BINARY OUTDIR}
out=${2:?usage: capture-outputs.sh BINARY OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for s in "$root"/scenarios/*.json "$root"/scenarios/*.yaml; do
    name=$(basename "$s")
    name=${name%.*}
    "$bin" check "$s" >"$out/$name.check.txt" 2>&1 || true
    "$bin" run "$s" -o "$out/run-$name" -q --force >"$out/$name.run.txt" 2>&1 || echo "exit $?" >>"$out/$name.run.txt"
done
toy="$root/scenarios/hotos21-toy.json"
"$bin" sweep "$toy" --set traffic.rate=120,200,280 -o "$out/sweep" -q >"$out/sweep.txt" 2>&1 || echo "exit $?" >>"$out/sweep.txt"
"$bin" map "$toy" --x traffic.rate=100..300:4 --y faults.0.duration=2s..20s:3 --replications 2 \
    -o "$out/map" -q >"$out/map.txt" 2>&1 || echo "exit $?" >>"$out/map.txt"
"$bin" assess "$toy" --replications 2 -o "$out/assess" -q >"$out/assess.txt" 2>&1 || echo "exit $?" >>"$out/assess.txt"
"$bin" tune "$toy" --objective recovery --replications 2 --fresh-seeds 2 -o "$out/tune" -q \
    >"$out/tune.txt" 2>&1 || echo "exit $?" >>"$out/tune.txt"
"$bin" schedule --preset grpc --max-attempts 5 --csv >"$out/schedule.csv" 2>&1 || echo "exit $?" >>"$out/schedule.csv"
"$bin" schedule --policy "$root/scenarios/spanner-90s.json" --name platform >"$out/schedule.txt" 2>&1 || true
# Timings vary from run to run: keep only their presence.
find "$out" -name perf.json -exec sh -c ': >"$1"' _ {} \;
echo "captured into $out"
