#!/usr/bin/env bash
# Run 134: slo-aware as an SLO-driven lender (merge of branch lender): llm's slo-aware
# cells again (the earlier ones kept aside);
# capture_hostfn (node types no longer compared); train-small's detshare cells with the
# queueing columns (eval-cuda-host); then scale's cells left.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{
  DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_capture_hostfn --jobs 1 > "$t/gpu-capture_hostfn.log" 2>&1
  echo "gpu test capture_hostfn: exit $? $(grep -a 'Synthesis' "$t/gpu-capture_hostfn.log" | tail -1)"
  grep -a "forked\|Assertion" "$t/gpu-capture_hostfn.log" | head -20
} > "$out/checks.txt" 2>&1
python3 - lab/results/eval-cuda-quick <<'PY'
import json, sys
r = sys.argv[1]
lines = open(r + "/cells.jsonl").read().splitlines()
old = [l for l in lines if json.loads(l)["experiment"] == "llm" and json.loads(l)["scenario"] == "detshare-slo-aware"]
open(r + "/cells.jsonl", "w").write("".join(l + "\n" for l in lines if l not in old))
open(r + "/llm-slo-aware-before-lender.jsonl", "a").write("".join(l + "\n" for l in old))
PY
RESULTS=lab/results/eval-cuda-quick BUDGET=80 LIMIT=130 OUT=$t/llm \
    bash bench/eval/gpu-run.sh --quick --calibrate llm > "$t/llm.txt" 2>&1
tar czf "$out/llm.tgz" -C "$t" llm llm.txt
RESULTS=lab/results/eval-cuda-host BUDGET=90 LIMIT=150 OUT=$t/host \
    bash bench/eval/gpu-run.sh --quick --calibrate --repeats 2 --modes native-timesliced,detshare-shared train-small > "$t/host.txt" 2>&1
tar czf "$out/host.tgz" -C "$t" host host.txt
RESULTS=lab/results/eval-cuda-quick BUDGET=${B:-150} LIMIT=220 OUT=$t/scale \
    bash bench/eval/gpu-run.sh --quick --calibrate scale > "$t/scale.txt" 2>&1
tar czf "$out/scale.tgz" -C "$t" scale scale.txt
cat "$out/checks.txt"; tail -8 "$t/llm.txt"; grep -A12 "^| scenario" lab/results/eval-cuda-quick/report.md | grep -a "slo-aware\|alone" | head -8; tail -6 "$t/host.txt"; tail -5 "$t/scale.txt"
