#!/usr/bin/env bash
# bench/eval on the sim: stats.py's unit tests; then `run.sh --quick --device sim latflood`
# stopped (SIGTERM, as `timeout` stops it) once a few cells have finished and started
# again: the second start runs only the cells the first did not finish, and every cell is
# recorded once; then report.py's table has medians with intervals and target verdicts.
# Then the other experiments' plumbing on their stand-ins, one repeat of 1 s windows and
# a few modes: infer refused before its calibration, then calibrated (its arrival rates
# fixed in calibration.json, a calibration table in the report) and run with train-small
# and overhead (whose moving policy must have moved its tenant).  workloads.py's loops,
# which only a GPU runs, have unit tests of their own (test_workloads.py).  Last, issue
# 28's later experiments' quick path on their stand-ins (llm calibrated, its SLO told to
# the server; determinism alone, co-located and moved; scale-2/4/8 with the server polled)
# and their report, and run.sh --estimate's GPU minutes.
# Usage: test_eval.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)/bench/eval
. "$here/python.sh"
"$python" "$here/test_stats.py"
"$python" "$here/test_workloads.py" 2>&1 | tail -3
"$python" "$here/test_experiments.py" 2>&1 | tail -3

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

run() {
    BUILD=$build bash "$here/run.sh" --quick --device sim --out "$out/more" --repeats 1 \
        --secs 1 --modes detshare-slo-aware,detshare-pulse-fixed,detshare-pulse-flip-100 "$@"
}
rc=0
run infer > "$out/run3.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q 'infer needs its calibration first' "$out/run3.log" ||
    fail "infer ran without its calibration (exit $rc)"
run --calibrate infer train-small overhead > "$out/run4.log" 2>&1 ||
    fail "the calibrated run failed"
"$python" - "$out/more" << 'PY' || fail "the calibrated run's cells"
import json, sys
cal = json.load(open(sys.argv[1] + "/calibration.json"))
rates = cal["infer"]["params"]["rates"]
assert [float(r) > 0 for r in rates.split(",")] == [True, True], rates
cells = [json.loads(l) for l in open(sys.argv[1] + "/cells.jsonl")]
assert len(cells) == 9 and all(c["ok"] for c in cells), [c.get("errors") for c in cells]
assert all(c["params"]["rates"] == rates for c in cells if c["experiment"] == "infer")
flip = [c for c in cells if c["scenario"] == "detshare-pulse-flip-100"][0]
assert flip["metrics"]["server"]["moves"] >= 10, flip["metrics"]
pair = [c for c in cells if c["scenario"] == "detshare-slo-aware" and c["experiment"] == "infer"]
assert pair[0]["metrics"]["lat"]["p99_ms_2"] > 0 and pair[0]["metrics"]["be"]["busy"] > 0
# The service's SLO: fixed by the calibration (1.2x its p99 alone), told to the server.
slo = cal["infer"]["params"]["slo"]
assert isinstance(slo, float) and slo > 0, slo
assert all(c["params"]["slo"] == slo for c in cells if c["experiment"] == "infer")
assert pair[0]["metrics"]["server"]["told"].get("lat") is not None, pair[0]["metrics"].get("server")
print("infer calibrated at %s requests/s; %d cells" % (rates, len(cells)))
PY
md=$out/more/report.md
grep -q '^| infer | 1 | .*rates=' "$md" || fail "no calibration table in the report"
"$python" - "$out/more/report.json" << 'PY' || fail "no aggregate for train-small"
import json, sys
exps = {e["name"]: e for e in json.load(open(sys.argv[1]))["experiments"]}
row = [r for r in exps["train-small"]["rows"] if r["scenario"] == "detshare-slo-aware"][0]
assert row["figures"]["*.agg"]["median"] > 0, row
PY
moves='^\| steps/s >= 0.97x kept on one half \| detshare-pulse-flip-100 \|'
grep -Eq "$moves [^|]+\| [^|]+\| no claim \(one repeat\)" "$md" ||
    fail "no verdict on the moves' cost"
echo "calibrated and ran the other experiments: $out/more"

BUILD=$build bash "$here/run.sh" --quick --device sim --out "$out/new" --repeats 1 --secs 1 \
    --modes detshare-slo-aware,detshare-pulse-flip-100 --calibrate llm determinism scale \
    > "$out/run5.log" 2>&1 || fail "the new experiments' run failed"
"$python" - "$out/new" << 'PY' || fail "the new experiments' cells"
import json, sys
cells = [json.loads(l) for l in open(sys.argv[1] + "/cells.jsonl")]
by = {(c["experiment"], c["scenario"]): c for c in cells}
assert all(c["ok"] for c in cells), [c.get("errors") for c in cells if not c["ok"]]
slo = json.load(open(sys.argv[1] + "/calibration.json"))["llm"]["params"]["slo"]
llm = by["llm", "detshare-slo-aware"]
assert slo > 0 and llm["params"]["slo"] == slo and llm["metrics"]["llm"]["tpot_p99_ms"] > 0
assert llm["metrics"]["server"]["told"]["llm"] is not None, llm["metrics"]["server"]
det = by["determinism", "detshare-pulse-flip-100"]["metrics"]
assert det["det"]["trials"] == 20 and det["det"]["sliced_bitwise"] > 0, det["det"]
assert det["server"]["moves"] >= 10, det["server"]
s8 = by["scale-8", "detshare-slo-aware"]["metrics"]
assert len([j for j in s8 if j.startswith(("lat", "be"))]) == 8, list(s8)
assert s8["server"]["polls"] > 0 and s8["server"]["admin_ms_p50"] > 0, s8["server"]
assert not any(c["scenario"].startswith("alone") for c in cells if c["experiment"] == "scale-8")
print("%d cells of the new experiments" % len(cells))
PY
md=$out/new/report.md
for t in 'TPOT p99 <= 1.2x alone' '0 LM-head trials differ from native alone' \
    'the slicing baseline drifts' 'lat1 p99 <= 1.2x alone'; do
    grep -Eq "^\| $t[^|]*\| detshare-slo-aware \| [^|]+\| [^|]+\| no claim \(one repeat\)" "$md" ||
        fail "no verdict on '$t'"
done
grep -q '^| 0 LM-head trials differ from native alone | detshare-pulse-flip-100 | 0 \[0, 0\] | 0 | no claim' \
    "$md" || fail "the moved tenant's LM head differs from alone's"
grep -q 'best native baseline.*not run: no native mode' "$md" || fail "no word on the native baseline"
est=$("$python" "$here/harness.py" --quick --device cuda --calibrate --estimate --out "$out/est" \
    llm determinism scale)
echo "$est" | grep -Eq '^total +[0-9]+ cells +(1?[0-9]|2[0-7])m' || fail "quick is over 27 GPU minutes: $est"
echo "the new experiments ran and reported: $out/new"
