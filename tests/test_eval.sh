#!/usr/bin/env bash
# bench/eval on the sim: stats.py's unit tests; then `run.sh --quick --device sim latflood`
# stopped (SIGTERM, as `timeout` stops it) once a few cells have finished and started
# again: the second start runs only the cells the first did not finish, and every cell is
# recorded once; then report.py's table has medians with intervals and target verdicts.
# Usage: test_eval.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)/bench/eval
. "$here/python.sh"
"$python" "$here/test_stats.py"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cells=$out/cells.jsonl
fail() { echo "FAIL: $*"; cat "$out"/run*.log; exit 1; }

BUILD=$build bash "$here/run.sh" --quick --device sim --out "$out" latflood > "$out/run1.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
    [ -f "$cells" ] && [ "$(wc -l < "$cells")" -ge 3 ] && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
first=$(wc -l < "$cells")
total=$(grep -o '[0-9]* cells, 0 finished before' "$out/run1.log" | awk '{ print $1 }')
[ "$rc" -eq 130 ] || fail "the first start exited $rc, not 130 (stopped)"
[ "$first" -ge 3 ] && [ "$first" -lt "${total:-0}" ] || fail "$first of ${total:-?} cells before the stop"
grep -q 'stopped;' "$out/run1.log" || fail "no word of the stop"

BUILD=$build bash "$here/run.sh" --quick --device sim --out "$out" latflood > "$out/run2.log" 2>&1 ||
    fail "the second start failed"
grep -q "^run.sh: $total cells, $first finished before, $((total - first)) to run" "$out/run2.log" ||
    fail "the second start did not take up the $first finished cells"
"$python" - "$cells" "$total" "$first" << 'PY' || fail "cells.jsonl"
import json, sys
cells = [json.loads(l) for l in open(sys.argv[1])]
total, first = int(sys.argv[2]), int(sys.argv[3])
keys = [c["key"] for c in cells]
runs = [c["invocation"] for c in cells]
assert len(keys) == total == len(set(keys)), "%d cells, %d distinct, %d planned" % (
    len(keys), len(set(keys)), total)
assert len(set(runs[:first])) == 1 and len(set(runs[first:])) == 1 and runs[0] != runs[-1], \
    "cells by start: %s" % runs
assert all(c["ok"] for c in cells), [c.get("errors") for c in cells if not c["ok"]]
print("%d cells, %d from the first start, none run twice" % (total, first))
PY

"$python" "$here/report.py" "$out" > /dev/null || fail "report.py"
md=$out/report.md
grep -q '^| scenario | latency p50 (ms) | latency p99 (ms) | flood kernels/s |' "$md" ||
    fail "no latflood table in the report"
num='[0-9.e+-]+'
for mode in alone-detshare:lat shared static temporal slo-aware tpot-first; do
    [ "$mode" = alone-detshare:lat ] || mode=detshare-$mode
    grep -Eq "^\| $mode \| $num \[$num, $num\] \| $num \[$num, $num\] \|" "$md" ||
        fail "no medians with intervals for $mode"
done
grep -Eq '^\| latency p99 <= 1.2x alone \| detshare-slo-aware \| [^|]+\| [^|]+\| (met|missed|inconclusive)' "$md" ||
    fail "no verdict on slo-aware's p99 target"
"$python" -c 'import json, sys; json.load(open(sys.argv[1]))["experiments"][0]["targets"]' \
    "$out/report.json" || fail "report.json"
echo "resumed and reported: $out"
