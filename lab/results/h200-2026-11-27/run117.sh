#!/usr/bin/env bash
# Run 117 (runs 115 and 116 found no MPS daemon ready: the server's new readiness check
# connected to the daemon's socket with a type it does not take, and every server on the
# GPU failed to start): the fault benchmark first, then the facts, then the gpu suites.
#  - gpu suites of the new checks (launch errors against the native driver, graph host
#    copies, conditional-body capture, pool quota, uid rules, host bound, escapes, faults);
#  - bench/fault/blast.sh: one tenant's fault beside 4 victims, 3 repeats of each scenario;
#  - bench/fault/mps-facts.sh again, with work-based kernels (two MPS daemons side by
#    side, or taking turns?) and the driver's own error log (cuLogs);
#  - CDP through detshare in a domain of its own; JAX's float64 solve with debug logs.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/faultprobe" bench/fault/faultprobe.cu -lcuda
nvcc -arch=sm_90 -rdc=true -o "$t/cdp" bench/compat/cdp.cu -lcudadevrt
OUT=$out timeout 200 bash bench/fault/blast.sh "$t/faultprobe" build-gpu ${REPEATS:-2} 4 > /dev/null 2>&1
echo "blast: exit $?" >> "$out/device.txt"
OUT=$t timeout 90 bash bench/fault/mps-facts.sh "$t/faultprobe" > /dev/null 2>&1
echo "mps-facts: exit $?" >> "$out/device.txt"; cp "$t/mps-facts.jsonl" "$out/" 2>/dev/null
{
  printf 'quota cdp* isolation=own\n' > "$t/own.conf"
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/sc" --config "$t/own.conf" --mps-dir "$t/mpsc" 2> "$t/server-cdp.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/sc" ] && break; sleep 0.05; done
  echo "detshare, isolation=own: $(DETSHARE_SERVER=unix:$t/sc DETSHARE_TENANT=cdp-own LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/cdp" 2>&1 | tr '\n' ' ')"
  echo "detshare, shared: $(DETSHARE_SERVER=unix:$t/sc DETSHARE_TENANT=shared-cdp LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/cdp" 2>&1 | tr '\n' ' ')"
  DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/sc DETSHARE_TENANT=jax LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH \
     XLA_FLAGS=--xla_gpu_autotune_level=0 timeout 120 python3 bench/breadth/programs.py jaxsolve > "$t/jax.out" 2> "$t/jax.err"
  echo "jaxsolve through detshare: exit $? $(tail -1 "$t/jax.out")"
  kill -TERM $srv; wait $srv
  grep -c "not an MPS client although" "$t/server-cdp.log" | sed 's/^/no-MPS warnings at start: /'
  grep -a -i "failed\|-> [0-9]\|not supported\|warn\|error" "$t/jax.err" | grep -v "^$" | head -40 | sed 's/^/  jax: /'
  grep -a "tenant .*jax\|jax\]" "$t/server-cdp.log" | grep -a -i "fail\|-> \|refus\|warn\|error\|not supp" | head -30 | sed 's/^/  server: /'
} > "$out/compat.txt" 2>&1
for s in fault launch_checks graph_hostcopy graph_cond pool_quota escape quota_uid host_bound; do
    DS_TEST_DEVICE=cuda timeout 40 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" >> "$out/device.txt"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A6 "Assertion\|FAIL" | head -40 >> "$out/gpu-suites.txt"
done
cd "$t" && tar czf "$out/run117-raw.tgz" --exclude='*.tgz' --exclude=faultprobe --exclude=cdp . 2>/dev/null
cat "$out/device.txt" "$out/compat.txt"
python3 - "$out/blast.jsonl" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    print(r["scenario"], r["repeat"], r["round"], "survived", r["victims_survived"], "/", r["victims"],
          "wild", r["wild_error"], "recovery_ms", r["recovery_ms"], "own", r["log_own_fault"],
          "named", r["log_lost_to_named"], "unattr", r["log_unattributed"], "quar", r["log_quarantined"],
          "told", r["victims_told_on_stderr"], "nomps", r["log_no_mps_client"])
PY
