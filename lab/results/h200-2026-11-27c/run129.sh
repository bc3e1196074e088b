#!/usr/bin/env bash
# Run 129: the session's merges on the GPU: first_launch after the control block is
# registered at the hello; capture info (graph + dependencies: the sample's while loop),
# joined captures, several servers, TLS, NVML (nvidia-smi plain/-q/topo -m in a tenant);
# the three graph samples; then bench/eval (llm recalibrated, infer's last cells).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs:/usr/local/cuda/lib64"
sum=$out/summary.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$sum" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/first_launch" bench/compat/first_launch.cu
{
  echo "== native"; "$t/first_launch" 6
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  for i in 1 2; do echo "== detshare $i"; DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/first_launch" 6; done
  for e in graph_captured_while graph_captured_while_shared; do
    echo "== $e native"; env LD_LIBRARY_PATH=$LD_LIBRARY_PATH timeout 30 ./build-gpu/examples/$e; echo "exit $?"
    echo "== $e detshare"; DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 ./build-gpu/examples/$e; echo "exit $?"
  done
  for a in "" "-q" "topo -m"; do
    echo "== nvidia-smi $a"
    DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 nvidia-smi $a > "$t/smi.out" 2> "$t/smi.err"
    echo "exit $?"; head -60 "$t/smi.out"; grep -a -i "not served\|slot" "$t/smi.err" | head -20
  done
  kill -TERM $srv; wait $srv
} > "$out/checks.txt" 2>&1
echo "checks done" >> "$sum"
for s in capture_info capture_hostfn multiserver tls nvml nvml_smi graph_cond capture_to_graph gate; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" >> "$sum"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -40 >> "$out/suites-fail.txt"
done
grep -a "both use device addresses" "$t/gpu-multiserver.log" | head -3 >> "$sum"
tar czf "$out/suites.tgz" -C "$t" $(cd "$t" && ls gpu-*.log)
timeout 90 bash bench/breadth/samples.sh --build build-gpu --bin .dev/samples/bin.tar.xz --out "$t/samples" --jobs 6 \
    --only "graphConditionalNodes simpleCudaGraphs graphMemoryNodes" > "$t/samples.txt" 2>&1
echo "samples: exit $?" >> "$sum"; tail -12 "$t/samples.txt" >> "$sum"
tar czf "$out/samples.tgz" -C "$t" samples samples.txt
RESULTS=lab/results/eval-cuda-quick-floor BUDGET=20 LIMIT=100 OUT=$t/floor \
    bash bench/eval/gpu-run.sh --quick --calibrate infer > "$t/floor.txt" 2>&1
tar czf "$out/floor.tgz" -C "$t" floor floor.txt
left=$(( ${END:-560} - SECONDS ))
RESULTS=lab/results/eval-cuda-quick BUDGET=$(( left - 60 )) LIMIT=$(( left - 10 )) OUT=$t/llm \
    bash bench/eval/gpu-run.sh --quick --calibrate llm > "$t/llm.txt" 2>&1
tar czf "$out/llm.tgz" -C "$t" llm llm.txt
cat "$sum"; tail -25 "$t/llm.txt"
