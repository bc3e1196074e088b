#!/usr/bin/env bash
# bench/breadth/samples.sh without a GPU: its refusals of bad arguments; samples.py's
# normalising, comparing and verdicts on canned sample outputs; then a whole run over
# stand-in programs (shell scripts named as samples) with a sim server, whose records and
# report must show the one program made to differ, and only it.
# Usage: test_samples.sh BUILD_DIR   (KEEP=DIR: work in DIR and leave it, to look at)
set -uo pipefail
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
sh=$repo/bench/breadth/samples.sh
py="python3 $repo/bench/breadth/samples.py"
t=${KEEP:-$(mktemp -d)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Arguments: each refused with exit status 2 and a word of why.
refused() {
    local want=$1; shift
    bash "$sh" "$@" > "$t/o" 2>&1
    local rc=$?
    [ "$rc" -eq 2 ] || fail "samples.sh $* exited $rc, not 2"
    grep -q -- "$want" "$t/o" || fail "samples.sh $*: no '$want' in: $(cat "$t/o")"
}
refused "unknown option '--bogus'" --bogus x
refused "needs a value" --jobs
refused "1 to 99" --jobs 0 --build "$build"
refused "static, shared or both" --cudart dynamic
refused "seconds" --timeout 2s
refused "detshare-server" --build "$t/nowhere"
mkdir -p "$t/bin/static"
refused "no $t/bin/shared" --build "$build" --bin "$t/bin"
refused "'noSuchSample' is not in samples.list" --build "$build" --bin "$t/bin" --cudart static \
    --only "vectorAdd noSuchSample"
refused '--cudart static|shared|both' --help

# Normalising: timings, addresses, the device's name, detshare's log lines and carriage
# returns go; what the program computed stays.
printf '%s\n' '> Using CUDA device [0]: NVIDIA H200' 'GPU Device 0: "Hopper" with compute capability 9.0' \
    'Performance= 1234.5 GFlop/s, Time= 0.105 msec, Size= 131072000 Ops' \
    'Processing time: 12.3 (ms)' 'buffer at 0x7f3a12345000 holds 42' \
    '12:00:01.234 detshare warn: something of our own' 'Runtime Version 13.0' \
    "checksum = 1.5e+03$(printf '\r')" 'Result = PASS' '' > "$t/a"
printf '%s\n' 'buffer at 0xADDR holds 42' 'Runtime Version 13.0' 'checksum = 1.5e+03' \
    'Result = PASS' > "$t/want"
$py normalize "$t/a" > "$t/got" || fail "normalize exited $?"
diff -u "$t/want" "$t/got" || fail "normalize"
printf 'lshm simpleIPCshm%s\nProcess %s complete!\n' 4242 1 4242 0 > "$t/n"
printf 'lshm simpleIPCshm%s\nProcess %s complete!\n' 977 0 977 1 > "$t/d"
$py compare "$t/n" "$t/d" > /dev/null && fail "pids and order alike without flags"
$py compare "$t/n" "$t/d" sorted,numbers > "$t/o" || fail "sorted,numbers: $(cat "$t/o")"

printf 'Task [1] on host (40)\nAll Done!\n' > "$t/n"
printf 'Task [1] on device (4000)\nAll Done!\n' > "$t/d"
$py compare "$t/n" "$t/d" sorted,numbers > /dev/null && fail "host and device alike"
$py compare "$t/n" "$t/d" last > "$t/o" || fail "last: $(cat "$t/o")"

# Comparing: a computed value that differs is a difference, shown with its lines.
sed 's/holds 42/holds 43/' "$t/a" | sed 's/0x7f3a12345000/0x7f0000001000/' > "$t/b"
$py compare "$t/a" "$t/b" > "$t/o" && fail "42 and 43 compared identical"
grep -qx -- '-buffer at 0xADDR holds 42' "$t/o" && grep -qx -- '+buffer at 0xADDR holds 43' "$t/o" ||
    fail "the diff does not show the differing lines: $(cat "$t/o")"
sed 's/0\.105/0.117/; s/H200/H100 80GB HBM3/' "$t/a" > "$t/b"
$py compare "$t/a" "$t/b" > "$t/o" || fail "timings and names made a difference: $(cat "$t/o")"

# Verdicts.
python3 - "$repo/bench/breadth" << 'EOF' || fail "verdicts"
import sys
sys.path.insert(0, sys.argv[1])
from samples import verdict
cases = [("Test PASSED\n", 0, "passed"), ("Result = PASS\n", 1, "failed"),
         ("Two or more GPUs with Peer-to-Peer access capability are required\nWaiving test.\n", 2,
          "waived"), ("x\n", 124, "timeout"), ("done\n", 0, "exit0"),
         ("Test FAILED\n", 0, "failed"), ("Killed\n", 137, "timeout")]
bad = [(c, verdict(c[0], c[1])[0]) for c in cases if verdict(c[0], c[1])[0] != c[2]]
assert not bad, bad
EOF

# A whole run: stand-ins for five samples, one of them (deviceQuery) printing something
# else as a tenant, one (clock) something else each run, one (simplePrintf) the same with
# another exit status, one (cdpSimplePrint) checking it is a tenant of a domain of its own.
stand_in() {
    for rt in static shared; do
        mkdir -p "$t/bin/$rt/$1"
        printf '#!/bin/sh\n%s\n' "$2" > "$t/bin/$rt/$1/$1"
        chmod +x "$t/bin/$rt/$1/$1"
    done
}
tenant_check='if [ -n "${DETSHARE_SERVER:-}" ]; then
  [ -S "${DETSHARE_SERVER#unix:}" ] || { echo "no server socket"; exit 9; }
  case "$LD_LIBRARY_PATH" in '"$build"'/client:*) ;; *) echo "client not first: $LD_LIBRARY_PATH"; exit 9;; esac
fi'
stand_in vectorAdd "$tenant_check
echo 'Copy input data from the host memory to the CUDA device'; echo 'Test PASSED'"
stand_in simpleP2P "echo 'Two or more GPUs with Peer-to-Peer access capability are required'; echo 'Waiving test.'; exit 2"
stand_in deviceQuery "$tenant_check
echo '  Total amount of global memory: 143156 MBytes'
if [ -n \"\${DETSHARE_SERVER:-}\" ]; then echo '  Maximum number of threads per block: 512'; else echo '  Maximum number of threads per block: 1024'; fi
echo 'Result = PASS'"
stand_in cdpSimplePrint "$tenant_check
if [ -n \"\${DETSHARE_SERVER:-}\" ]; then case \$DETSHARE_TENANT in samples-own-cdpSimplePrint-*) ;; *) exit 8;; esac; fi
echo 'Launching cdp_kernel() with CUDA Dynamic Parallelism:'; echo 'PASSED'"
stand_in clock "echo \"Average clocks/block = 1000\"; echo \"sum \$(od -An -N4 -tu4 /dev/urandom)\"; echo 'Test passed'"
stand_in simplePrintf "echo 'Hello World from GPU!'; [ -z \"\${DETSHARE_SERVER:-}\" ]"
rm -rf "$t/bin/shared/vectorAdd"
DEVICE=sim bash "$sh" --build "$build" --bin "$t/bin" --out "$t/out" --jobs 2 --timeout 20 \
    --native-twice --only "vectorAdd simpleP2P deviceQuery cdpSimplePrint clock simplePrintf" > "$t/run.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "the run exited $rc, not 1 (programs differ): $(cat "$t/run.log")"
grep -q '^\[[0-9]*/12\] deviceQuery  *static .*DIFFERENT' "$t/run.log" || fail "no progress line: $(cat "$t/run.log")"
grep -q 'listening on' "$t/out/server.log" || fail "no server log"
python3 - "$t/out/samples.jsonl" << 'EOF' || fail "samples.jsonl"
import json, sys
recs = {(r["program"], r["cudart"]): r for r in map(json.loads, open(sys.argv[1]))}
assert len(recs) == 12, sorted(recs)
for (name, rt), r in recs.items():
    assert r["device"] and r["driver"] and r["date"], r
    want = name not in ("deviceQuery", "clock", "simplePrintf") and (name, rt) != ("vectorAdd", "shared")
    assert r["identical"] == want, (name, rt, r)
    assert bool(r.get("native_repeatable")) == (name != "clock" and r["native"]["status"] != "missing"), r
dq = recs[("deviceQuery", "static")]
assert dq["native"]["status"] == dq["detshare"]["status"] == "passed", dq
assert "-  Maximum number of threads per block: 1024" in dq["diff"], dq["diff"]
assert recs[("simpleP2P", "shared")]["detshare"]["status"] == "waived"
assert recs[("cdpSimplePrint", "static")]["detshare"]["exit"] == 0
assert recs[("vectorAdd", "shared")]["native"]["status"] == "missing"
pf = recs[("simplePrintf", "static")]
assert (pf["native"]["status"], pf["detshare"]["status"], pf["diff"]) == ("exit0", "failed", []), pf
EOF
md=$t/out/samples.md
grep -q '^- cudart static: 6 programs; passed or waived natively 6, through detshare 5; identical to native 3 of 6$' "$md" ||
    fail "summary line: $(cat "$md")"
grep -q '^### deviceQuery (shared): exit 0 natively, 0 through detshare; two native runs agree$' "$md" ||
    fail "no deviceQuery difference in the report"
grep -q -A3 '^### simplePrintf (static): exit 0 natively, 1 through detshare' "$md" ||
    fail "simplePrintf's exit status not told"
grep -q '^### clock (static): .*; \*\*two native runs differ too\*\*$' "$md" || fail "clock not told as varying natively"
grep -q '^+  Maximum number of threads per block: 512' "$md" || fail "the report lacks the differing line"
# The programs as a tarball of BIN, one program, one build: all identical, exit status 0.
tar cJf "$t/bin.tar.xz" -C "$t" bin
DEVICE=sim bash "$sh" --build "$build" --bin "$t/bin.tar.xz" --out "$t/out2" --cudart static \
    --only vectorAdd > "$t/run2.log" 2>&1 || fail "the tarball run exited $?: $(cat "$t/run2.log")"
grep -q '^- cudart static: 1 programs; .* identical to native 1 of 1$' "$t/out2/samples.md" ||
    fail "tarball run: $(cat "$t/out2/samples.md")"
echo "samples.sh: arguments, normalising, verdicts and a stand-in run all as expected"
