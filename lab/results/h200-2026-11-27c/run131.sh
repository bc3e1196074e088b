#!/usr/bin/env bash
# Run 131 (not run in the session that wrote it: its device time was spent): plain nvidia-smi in a tenant with MIG/inforom/virtualization served; bench/eval
# llm (tpot-first again after 61ac40c, its earlier cells kept aside, and the cells left)
# and determinism's cells left; infer-floor's last cell; TCP/TLS copy rates against the
# Unix socket's (bench/overhead/copy_ratio.sh), gpu_tcp and gpu_multiserver (peer copies).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
# tpot-first's llm cells measured before 61ac40c go aside (kept), so that run.sh runs them again
python3 - lab/results/eval-cuda-quick <<'PY'
import json, sys
r = sys.argv[1]
lines = open(r + "/cells.jsonl").read().splitlines()
old = [l for l in lines if json.loads(l)["experiment"] == "llm" and json.loads(l)["scenario"] == "detshare-tpot-first"]
open(r + "/cells.jsonl", "w").write("".join(l + "\n" for l in lines if l not in old))
open(r + "/llm-tpot-first-before-61ac40c.jsonl", "a").write("".join(l + "\n" for l in old))
PY
{
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  for a in "" "-q" "topo -m"; do
    echo "== nvidia-smi $a"
    DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 nvidia-smi $a > "$t/smi.out" 2> "$t/smi.err"
    echo "exit $?"; [ -z "$a" ] && cat "$t/smi.out"; grep -a "not served" "$t/smi.err" | head -30
  done
  kill -TERM $srv; wait $srv
  for s in nvml nvml_smi tcp multiserver; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -30
  done
} > "$out/smi.txt" 2>&1
BUILD=build-gpu timeout 120 bash bench/overhead/copy_ratio.sh > "$out/copy_ratio.txt" 2>&1
RESULTS=lab/results/eval-cuda-quick BUDGET=${B:-240} LIMIT=${L:-300} OUT=$t/llm \
    bash bench/eval/gpu-run.sh --quick --calibrate llm determinism > "$t/llm.txt" 2>&1
tar czf "$out/llm.tgz" -C "$t" llm llm.txt
RESULTS=lab/results/eval-cuda-quick-floor BUDGET=10 LIMIT=80 OUT=$t/floor \
    bash bench/eval/gpu-run.sh --quick --calibrate infer > "$t/floor.txt" 2>&1
tar czf "$out/floor.tgz" -C "$t" floor floor.txt
head -c 3000 "$out/smi.txt"; tail -30 "$t/llm.txt"
