#!/usr/bin/env bash
# Run 121: bench/fault/blast.sh after the recovery wait (the first tenant after a fault
# must be served at its first try), nvidia-smi's outputs kept (run 120: slots 26 and 72
# asked, plain and -q exit 255), torch.profiler + detshare-ctl trace once the tenant is
# there, then NVIDIA's CUDA samples natively and through detshare (bench/breadth/samples.sh).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/faultprobe" bench/fault/faultprobe.cu -lcuda
SCENARIOS="default quarantine group" OUT=$out timeout 150 bash bench/fault/blast.sh "$t/faultprobe" build-gpu 1 4 > /dev/null 2>&1
echo "blast: exit $?" >> "$out/device.txt"
python3 - "$out/blast.jsonl" <<'PY' >> "$out/device.txt"
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["scenario"], r["round"], "survived", r["victims_survived"], "/", r["victims"], "tries", r["recovery_tries"],
          "unattr", r["log_unattributed"], "quar", r["log_quarantined"], "prob", r.get("log_probation"), "culprit", r.get("log_culprit_found"))
PY
{
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  DETSHARE_TENANT=prof DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 90 python3 -c "
import torch,time
from torch.profiler import profile,ProfilerActivity as A
x=torch.randn(4096,4096,device='cuda')
p=profile(activities=[A.CPU,A.CUDA]);p.start();[x@x for _ in range(20)];torch.cuda.synchronize();p.stop()
open('$t/ready','w').close()
t=time.time()
while time.time()-t<8: x@x; torch.cuda.synchronize()
print('done')" > "$t/prof.out" 2> "$t/prof.err" &
  prof=$!
  for _ in $(seq 300); do [ -e "$t/ready" ] && break; sleep 0.1; done
  ./build-gpu/server/detshare-ctl --admin "unix:$t/s.admin" trace prof --seconds 3 > "$t/trace.json" 2> "$t/trace.err"
  echo "trace: exit $? bytes $(wc -c < "$t/trace.json") $(cat "$t/trace.err")"
  wait $prof; echo "profiled program: exit $?"
  python3 tests/support/check_trace.py "$t/trace.json" tenants=1 2>&1 | tail -2
  python3 -c "
import json,collections
d=json.load(open('$t/trace.json')); ev=d['traceEvents']
k=collections.Counter(e.get('name','')[:50] for e in ev if e.get('ph')=='X')
print('trace events', len(ev), 'dropped', d.get('metadata',{}).get('detshare',{}).get('dropped'), 'top', k.most_common(3))"
  kill -TERM $srv; wait $srv
} > "$out/trace.txt" 2>&1
cp "$t/trace.json" "$out/trace-prof.json" 2>/dev/null
OUT=$t/nvml BUILD=build-gpu timeout 200 bash bench/compat/nvml-check.sh > /dev/null 2>&1
tar czf "$out/nvml.tgz" -C "$t" nvml 2>/dev/null
cat "$out/device.txt" "$out/trace.txt"
timeout 330 bash bench/breadth/samples.sh --build build-gpu --bin .dev/samples/bin.tar.xz --out "$out/samples" --jobs 3 > "$t/samples.log" 2>&1
echo "samples: exit $?"; tail -5 "$t/samples.log"
cp "$t/samples.log" "$out/samples/" 2>/dev/null
tar czf "$out/samples-runs.tgz" -C "$out/samples" runs 2>/dev/null && rm -rf "$out/samples/runs"
head -30 "$out/samples/samples.md" 2>/dev/null
