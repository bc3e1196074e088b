#!/usr/bin/env bash
# Run 127: issue 29's checks after the joined-capture fix (a stream forked from a capture
# by an event is capturing for the executor and the backend), nvidia-smi in a tenant with
# the debug log (what slot 26 of its internal table is asked with), the gpu suites the
# vamap/handover/TLS moves touch, then the CUDA samples built off the box, natively and
# through detshare.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
sum=$out/summary.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; } > "$sum" 2>&1
t=$(mktemp -d)
DS_TEST_DEVICE=cuda timeout 60 ./build-gpu/tests/test_capture_hostfn --jobs 1 > "$out/capture_hostfn.log" 2>&1
echo "capture_hostfn: exit $? $(grep -a Synthesis "$out/capture_hostfn.log" | tail -1)" >> "$sum"
grep -a -v "^  server" "$out/capture_hostfn.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -60 >> "$sum"
{
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  for a in "" "-q" "-L" "topo -m"; do
    echo "== nvidia-smi $a"
    DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 nvidia-smi $a > "$t/smi$a.out" 2> "$t/smi$a.err"
    echo "exit $?"; head -40 "$t/smi$a.out"; grep -a -i "slot\|unknown\|nvml" "$t/smi$a.err" | head -20
  done
  kill -TERM $srv; wait $srv
} > "$out/smi.txt" 2>&1
cp "$t/server.log" "$out/smi-server.log" 2>/dev/null
echo "smi done" >> "$sum"
for s in va hostreg managed handover tls tcp nvml nvml_smi graph graph_host capture_to_graph graph_mem launch_checks; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" >> "$sum"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -40 >> "$out/suites-fail.txt"
done
tar czf "$out/suites.tgz" -C "$t" $(cd "$t" && ls gpu-*.log) 2>/dev/null
timeout 300 bash bench/breadth/samples.sh --build build-gpu --bin .dev/samples/bin.tar.xz --out "$t/samples" --jobs 8 > "$t/samples.txt" 2>&1
echo "samples: exit $?" >> "$sum"
tail -30 "$t/samples.txt" >> "$sum"
tar czf "$out/samples.tgz" -C "$t" samples samples.txt 2>/dev/null
cat "$sum"
