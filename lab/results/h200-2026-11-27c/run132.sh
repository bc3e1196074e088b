#!/usr/bin/env bash
# Run 132: bench/eval llm (tpot-first again after 61ac40c, its earlier cells kept aside,
# and the cells left) and determinism's cells left.  First plain nvidia-smi again with MIG
# mode served (its whole debug log kept), gpu_nvml, and bench/breadth's cuSPARSE and
# JAX-solve rows with the breadth server's own MPS directory (run 131's did not start).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
{
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 nvidia-smi > "$t/smi.out" 2> "$out/smi-plain.err"
  echo "plain nvidia-smi exit $?"; cat "$t/smi.out"
  kill -TERM $srv; wait $srv
  for s in nvml; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -30
  done
} > "$out/smi.txt" 2>&1
WHAT="sparse jaxsolve" CAP=60 BUILD=build-gpu OUT=$t/breadth timeout 200 bash bench/breadth/run.sh > "$t/breadth.txt" 2>&1
tar czf "$out/breadth.tgz" -C "$t" breadth breadth.txt
# tpot-first's llm cells measured before 61ac40c go aside (kept), so that run.sh runs them again
python3 - lab/results/eval-cuda-quick <<'PY'
import json, sys
r = sys.argv[1]
lines = open(r + "/cells.jsonl").read().splitlines()
old = [l for l in lines if json.loads(l)["experiment"] == "llm" and json.loads(l)["scenario"] == "detshare-tpot-first"]
open(r + "/cells.jsonl", "w").write("".join(l + "\n" for l in lines if l not in old))
open(r + "/llm-tpot-first-before-61ac40c.jsonl", "a").write("".join(l + "\n" for l in old))
PY
RESULTS=lab/results/eval-cuda-quick BUDGET=${B:-270} LIMIT=${L:-330} OUT=$t/llm \
    bash bench/eval/gpu-run.sh --quick --calibrate llm determinism > "$t/llm.txt" 2>&1
tar czf "$out/llm.tgz" -C "$t" llm llm.txt
head -c 2500 "$out/smi.txt"; tail -6 "$t/breadth.txt"; tail -30 "$t/llm.txt"
