#!/usr/bin/env bash
# Run 120: what landed this session, on the GPU.
#  - gpu suites: export (slot 51/39 against the native driver), handover, pool_quota,
#    launch_checks, trace, nvml_smi, graph_hostcopy (captured pageable copies against the
#    native driver), fault, escape;
#  - JAX's float64 solve natively and through detshare (the slot-51 refusal);
#  - torch.profiler through detshare (CUPTI refused with one line) and detshare-ctl trace;
#  - bench/compat/nvml-check.sh (nvidia-smi inside a tenant, nvmlInternalGetExportTable);
#  - bench/fault/blast.sh: default, own, quarantine (probation, 3 rounds), mps-off, group.
# Carries a slim build in .dev/build-gpu.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
for s in export handover pool_quota launch_checks trace nvml_smi graph_hostcopy fault escape; do
    DS_TEST_DEVICE=cuda timeout 90 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" >> "$out/device.txt"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -60 >> "$out/gpu-suites.txt"
done
cat "$out/device.txt"
# JAX and the profiler, natively then through one server.
{
  XLA_FLAGS=--xla_gpu_autotune_level=0 timeout 120 python3 bench/breadth/programs.py jaxsolve > "$t/jax-native.out" 2> "$t/jax-native.err"
  echo "jaxsolve native: exit $? $(tail -1 "$t/jax-native.out")"
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  tenant() { DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$@"; }
  DETSHARE_LOG=debug DETSHARE_TENANT=jax XLA_FLAGS=--xla_gpu_autotune_level=0 tenant timeout 120 python3 bench/breadth/programs.py jaxsolve > "$t/jax.out" 2> "$t/jax.err"
  echo "jaxsolve through detshare: exit $? $(tail -1 "$t/jax.out")"
  grep -a "slot 51\|not served\|Unable\|refus" "$t/jax.err" | sort | uniq -c | sort -rn | head -12 | sed 's/^/  jax: /'
  DETSHARE_TENANT=prof tenant timeout 60 python3 -c "
import torch,time
from torch.profiler import profile,ProfilerActivity as A
x=torch.randn(4096,4096,device='cuda')
p=profile(activities=[A.CPU,A.CUDA]);p.start();[x@x for _ in range(20)];torch.cuda.synchronize();p.stop()
print('profiler rows', len(p.key_averages()))
t=time.time()
while time.time()-t<6: x@x; torch.cuda.synchronize()
print('done')" > "$t/prof.out" 2> "$t/prof.err" &
  prof=$!
  sleep 3
  LD_LIBRARY_PATH=$PWD/.dev/libs ./build-gpu/server/detshare-ctl --admin "unix:$t/s.admin" trace prof --seconds 2 > "$t/trace.json" 2> "$t/trace.err"
  echo "trace: exit $? bytes $(wc -c < "$t/trace.json")"
  wait $prof; echo "profiled program: exit $? $(tr '\n' ' ' < "$t/prof.out")"
  echo "CUPTI lines on its stderr: $(grep -c 'CUPTI' "$t/prof.err")"
  python3 tests/support/check_trace.py "$t/trace.json" tenants=1 2>&1 | tail -3 | sed 's/^/  check_trace: /'
  python3 -c "
import json,sys,collections
d=json.load(open('$t/trace.json')); ev=d['traceEvents']
k=collections.Counter(e.get('name','')[:40] for e in ev if e.get('ph')=='X')
print('  trace events', len(ev), 'metadata', d.get('metadata',{}).get('detshare',{}).get('dropped'), 'top', k.most_common(4))" 2>&1
  kill -TERM $srv; wait $srv
} > "$out/compat.txt" 2>&1
cp "$t/trace.json" "$out/trace-prof.json" 2>/dev/null
cat "$out/compat.txt"
OUT=$t/nvml BUILD=build-gpu timeout 200 bash bench/compat/nvml-check.sh > "$t/nvml-check.out" 2>&1
echo "nvml-check: exit $?" >> "$out/device.txt"
cp "$t/nvml/summary.txt" "$out/nvml-summary.txt" 2>/dev/null; cat "$out/nvml-summary.txt"
nvcc -arch=sm_90 -O2 -o "$t/faultprobe" bench/fault/faultprobe.cu -lcuda
OUT=$out timeout ${CAP:-200} bash bench/fault/blast.sh "$t/faultprobe" build-gpu 1 4 > /dev/null 2>&1
echo "blast: exit $?" >> "$out/device.txt"
python3 - "$out/blast.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["scenario"], r["round"], "survived", r["victims_survived"], "/", r["victims"], "wild", r["wild_error"],
          "rec_ms", r["recovery_ms"], "tries", r["recovery_tries"], "own", r["log_own_fault"], "named", r["log_lost_to_named"],
          "unattr", r["log_unattributed"], "quar", r["log_quarantined"], "prob", r.get("log_probation"),
          "culprit", r.get("log_culprit_found"), "grp", r.get("log_group_daemon_up"), "told", r["victims_told_on_stderr"])
PY
tar czf "$out/run120-raw.tgz" -C "$t" --exclude=faultprobe --exclude=nvml . 2>/dev/null
tail -2 "$out/device.txt"
