#!/bin/sh
# Counts the instructions two builds of retrysim execute on the engine's
# benchmark runs, and checks that their outputs are byte-identical. An
# instruction count does not depend on what else the machine is doing, so
# it shows a change of 1 % that timings on a shared machine cannot; it is
# not a timing (cache misses and branch mispredictions do not show), so
# read it beside `cargo bench --bench engine`.
#
#   scripts/count-instructions.sh /tmp/retrysim-before target/release/retrysim
#
# Runs under valgrind's callgrind (Debian: apt-get install valgrind), many
# times slower than natively: the peer model and the peer storm, with both
# builds, took 29 s in all on the 2-core machine. COUNT_ALL=1 adds the
# million-pending run's first 8 s (about 5.1-5.4 G instructions per build,
# twice the other two together). Prints one row per run: the
# instructions of each build and their ratio.
set -eu
old=${1:?usage: count-instructions.sh OLD_BINARY NEW_BINARY}
new=${2:?usage: count-instructions.sh OLD_BINARY NEW_BINARY}
command -v valgrind >/dev/null 2>&1 || {
    echo "count-instructions.sh: valgrind is not installed (Debian: apt-get install valgrind)" >&2
    exit 2
}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs="peer_model:$root/benches/scenarios/peer_model.json peer_storm:$root/benches/peer/storm.json"
if [ "${COUNT_ALL:-0}" = 1 ]; then
    runs="$runs million_pending_8s:$root/benches/scenarios/million_pending.json"
fi
# The instructions of one run of $1 on scenario $2, its outputs under $3.
count() {
    extra=""
    [ -n "$4" ] && extra="--set duration=$4"
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --callgrind-out-file="$3.cg" \
        "$1" run "$2" $extra -o "$3" --no-plots -q --force 2>"$3.log" >/dev/null
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$3.log"
}
printf '%-20s %16s %16s %8s  %s\n' run old new new/old outputs
status=0
for entry in $runs; do
    name=${entry%%:*}
    file=${entry#*:}
    limit=""
    case $name in *_8s) limit=8s ;; esac
    a=$(count "$old" "$file" "$work/old-$name" "$limit")
    b=$(count "$new" "$file" "$work/new-$name" "$limit")
    if diff -r -x perf.json "$work/old-$name" "$work/new-$name" >/dev/null; then
        same=identical
    else
        same=DIFFER
        status=1
    fi
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')
    printf '%-20s %16s %16s %8s  %s\n' "$name" "$a" "$b" "$ratio" "$same"
done
exit $status
