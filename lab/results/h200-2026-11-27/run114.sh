#!/usr/bin/env bash
# Run 114: facts for issues 24 and 29 before the code that uses them.
#  - bench/fault/mps-facts.sh: natively, who a fault under MPS reaches, whether MPS's
#    logs name the culprit, recovery time, and two MPS daemons on one GPU at once;
#  - CUDA dynamic parallelism natively, natively as an MPS client, and through detshare
#    with --mps off and --mps start (where does cudaErrorCdpNotSupported come from?);
#  - the cuSPARSE product 10 times each way, and JAX's float64 solve twice each way.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,compute_mode --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/faultprobe" bench/fault/faultprobe.cu -lcuda
nvcc -arch=sm_90 -rdc=true -o "$t/cdp" bench/compat/cdp.cu -lcudadevrt
timeout 150 bash bench/fault/mps-facts.sh "$t/faultprobe" > /dev/null 2>&1; echo "mps-facts: exit $?" >> "$out/device.txt"
{
  echo "native: $("$t/cdp" 2>&1)"
  mkdir -p "$t/m/pipe" "$t/m/log"
  CUDA_MPS_PIPE_DIRECTORY=$t/m/pipe CUDA_MPS_LOG_DIRECTORY=$t/m/log nvidia-cuda-mps-control -d; sleep 1
  echo "native MPS client: $(CUDA_MPS_PIPE_DIRECTORY=$t/m/pipe "$t/cdp" 2>&1)"
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$t/m/pipe nvidia-cuda-mps-control; sleep 1
  for mps in off start; do
    ./build-gpu/server/detshare-server --device cuda --mps $mps --listen "unix:$t/s$mps" 2> "$t/server-$mps.log" &
    srv=$!
    for _ in $(seq 400); do [ -S "$t/s$mps" ] && break; sleep 0.05; done
    echo "detshare --mps $mps: $(DETSHARE_SERVER=unix:$t/s$mps LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/cdp" 2>&1 | tr '\n' ' ')"
    kill -TERM $srv; wait $srv
    grep -i -E "cdp|not supported|refus|error|warn" "$t/server-$mps.log" | head -20 | sed 's/^/  server: /'
  done
} > "$out/cdp.txt" 2>&1
OUT=$out BUILD=build-gpu REPEATS=10 WHAT=sparse timeout 240 bash bench/breadth/repeat.sh > /dev/null 2>&1
mv "$out/repeat-summary.txt" "$out/repeat-sparse.txt" 2>/dev/null
OUT=$out BUILD=build-gpu REPEATS=2 WHAT=jaxsolve timeout 150 bash bench/breadth/repeat.sh > /dev/null 2>&1
mv "$out/repeat-summary.txt" "$out/repeat-jaxsolve.txt" 2>/dev/null
tail -3 "$out"/repeat-jaxsolve-detshare.err > "$out/jaxsolve-err.txt" 2>/dev/null
cd "$out" && cat jaxsolve-err.txt >> cdp.txt; tar czf /tmp/run114-raw.tgz * && mkdir -p /tmp/keep &&
  mv device.txt cdp.txt repeat-sparse.txt repeat-jaxsolve.txt mps-facts.jsonl mps-logs.txt /tmp/keep/ 2>/dev/null
rm -rf "$out"/*; mv /tmp/keep/* /tmp/run114-raw.tgz "$out"/
cat "$out"/device.txt "$out"/cdp.txt "$out"/repeat-sparse.txt "$out"/repeat-jaxsolve.txt
