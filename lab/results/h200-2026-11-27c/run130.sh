#!/usr/bin/env bash
# Run 130: why the LLM decoder alone through detshare has a TPOT p99 of 55 ms (native
# 4.1 ms, run 129): the job natively and through detshare, the same trace, its slowest
# tokens listed, the client's per-call table (DETSHARE_LOG=debug at exit) and the
# server's log; and plain nvidia-smi in a tenant after MIG/inforom were served.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
[ -d /opt/torch/.venv/bin ] && export PATH="/opt/torch/.venv/bin:$PATH"
t=$(mktemp -d)
py() { python3 - "$1" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
tp = sorted(d["tpot_ms"]); n = len(tp)
print("tokens", n, "p50 %.2f p90 %.2f p99 %.2f max %.2f" % (tp[n // 2], tp[int(n * .9)], tp[int(n * .99)], tp[-1]),
      "over 10 ms:", sum(x > 10 for x in tp), "prefills", d["prefills"], "steps", d["decode_steps"])
PY
}
args="llm-serve 6 cv=2.0 max_batch=16 olen=96 plen=384 rate=6 slo=none"
{
  echo "== native"; timeout 120 python3 bench/eval/workloads.py $args > "$t/native.json" 2> "$t/native.err"; py "$t/native.json"
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  for i in 1 2; do
    echo "== detshare $i"
    lv=info; [ $i = 2 ] && lv=debug
    DETSHARE_LOG=$lv DETSHARE_TENANT=llm$i DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH \
      timeout 120 python3 bench/eval/workloads.py $args > "$t/ds$i.json" 2> "$t/ds$i.err"; py "$t/ds$i.json"
    grep -a "calls: " "$t/ds$i.err" | head -90
  done
  echo "== detshare, DETSHARE_SPIN_US=0 (tenant sleeps at once)"
  DETSHARE_SPIN_US=0 DETSHARE_TENANT=llm3 DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH \
      timeout 120 python3 bench/eval/workloads.py $args > "$t/ds3.json" 2> "$t/ds3.err"; py "$t/ds3.json"
  echo "== nvidia-smi plain"
  DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 nvidia-smi > "$t/smi.out" 2> "$t/smi.err"
  echo "exit $?"; grep -a "not served" "$t/smi.err" | head
  kill -TERM $srv; wait $srv
} > "$out/llm-diag.txt" 2>&1
cp "$t/server.log" "$out/server.log"
tar czf "$out/raw.tgz" -C "$t" native.json native.err ds1.json ds1.err ds2.json ds2.err ds3.json ds3.err smi.out smi.err
cat "$out/llm-diag.txt" | head -150
